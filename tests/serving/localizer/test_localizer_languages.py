"""The learned localizer over every parsed language, on real indexes of real git repositories written here: a
Go-only, a TypeScript-only and a C++-only repository get history, localizer files and function vectors after `index` (the
counts `/v1/repos` reports from the manifest), a query naming a Go function's behaviour ranks its file first, and
on a mixed repository a Go file ranks above every Python file. The rankers are the shipped ones (trained on Python
commits), applied to every language's candidates."""

from __future__ import annotations

import pytest

from pipelines.indexer import Indexer
from semantica.layout import IndexLayout
from semantica.snapshot import Snapshot
from serving.localizer.stage import LearnedStage
from tests.conftest import make_config
from tests.dated_git import commit, one_commit_repo

pytestmark = pytest.mark.timeout(900)

GO_FILES = {
    "go.mod": "module example.com/clock\n\ngo 1.21\n",
    "clock/duration.go": '''package clock

import "strconv"

// ParseDuration reads a duration such as "90s" or "5m" into seconds.
func ParseDuration(text string) (int, error) {
	unit := text[len(text)-1:]
	value, err := strconv.Atoi(text[:len(text)-1])
	if err != nil {
		return 0, err
	}
	if unit == "m" {
		return value * 60, nil
	}
	return value, nil
}
''',
    "clock/alarm.go": '''package clock

// Alarm rings once its deadline passes.
type Alarm struct {
	deadline int
	rung     bool
}

// Ring marks the alarm as rung when now is past its deadline.
func (a *Alarm) Ring(now int) bool {
	if now >= a.deadline {
		a.rung = true
	}
	return a.rung
}
''',
    "clock/zone.go": '''package clock

// Offset gives a named time zone's offset from UTC in hours.
func Offset(zone string) int {
	switch zone {
	case "CET":
		return 1
	case "EST":
		return -5
	}
	return 0
}
''',
}
GO_FIX = {"clock/duration.go": GO_FILES["clock/duration.go"].replace(
    '\tunit := text[len(text)-1:]\n', '\tif text == "" {\n\t\treturn 0, nil\n\t}\n\tunit := text[len(text)-1:]\n')}
GO_ALARM_FIX = {"clock/alarm.go": GO_FILES["clock/alarm.go"].replace("now >= a.deadline", "now > a.deadline")}

TS_FILES = {
    "source/retry.ts": '''/** Delay before the next retry: exponential backoff capped at the limit. */
export function computeRetryDelay(attempt: number, limit: number): number {
  const delay = 0.3 * 2 ** (attempt - 1) * 1000;
  return Math.min(delay, limit);
}
''',
    "source/headers.ts": '''/** Merges two header objects; later values win. */
export const mergeHeaders = (source: Record<string, string>, extra: Record<string, string>) => {
  const result: Record<string, string> = {...source};
  for (const [key, value] of Object.entries(extra)) {
    result[key.toLowerCase()] = value;
  }
  return result;
};
''',
    "source/timeout.ts": '''export class TimeoutError extends Error {
  constructor(public request: string) {
    super(`Request timed out: ${request}`);
  }
}

/** Rejects when the promise does not settle within `ms`. */
export async function timeout<T>(promise: Promise<T>, ms: number, request: string): Promise<T> {
  return promise;
}
''',
    "source/types.d.ts": '''/** Options of one request. */
export interface Options {
  retry?: number;
  timeout?: number;
}

export declare function computeRetryDelay(attempt: number, limit: number): number;
''',
}
TS_FIX = {"source/retry.ts": TS_FILES["source/retry.ts"].replace("2 ** (attempt - 1)", "2 ** Math.max(attempt - 1, 0)")}
TS_HEADERS_FIX = {"source/headers.ts": TS_FILES["source/headers.ts"].replace("{...source}", "{...source, ...{}}")}
TS_TYPES_FIX = {"source/types.d.ts": TS_FILES["source/types.d.ts"].replace("  timeout?: number;\n",
                                                                           "  timeout?: number | false;\n")}

CPP_FILES = {
    "include/ring/buffer.h": """#ifndef RING_BUFFER_H
#define RING_BUFFER_H
#include <cstddef>

namespace ring {
/** A fixed-capacity ring buffer of ints. */
class Buffer {
 public:
  explicit Buffer(std::size_t capacity);
  bool push(int value);
  int pop();

 private:
  std::size_t head_ = 0, tail_ = 0, size_ = 0, capacity_;
  int* items_;
};
}  // namespace ring
#endif
""",
    "src/buffer.cpp": """#include "ring/buffer.h"

namespace ring {
Buffer::Buffer(std::size_t capacity) : capacity_(capacity), items_(new int[capacity]) {}

// Appends a value; false when the buffer is full.
bool Buffer::push(int value) {
  if (size_ == capacity_) return false;
  items_[tail_] = value;
  tail_ = (tail_ + 1) % capacity_;
  ++size_;
  return true;
}

int Buffer::pop() {
  int value = items_[head_];
  head_ = (head_ + 1) % capacity_;
  --size_;
  return value;
}
}  // namespace ring
""",
}
CPP_FIX = {"src/buffer.cpp": CPP_FILES["src/buffer.cpp"].replace("int Buffer::pop() {\n",
                                                                 "int Buffer::pop() {\n  if (size_ == 0) return -1;\n")}

PY_FILES = {
    "app/cache.py": 'class Cache:\n    """An in-memory cache of rendered pages."""\n\n    def __init__(self):\n'
                    '        self.pages = {}\n\n    def get(self, key):\n        return self.pages.get(key)\n',
    "app/users.py": 'def load_user(store, user_id):\n    """Fetch one user record from the store."""\n'
                    '    return store.get(user_id)\n\n\ndef display_name(user):\n    return user["first"] + " " + user["last"]\n',
    "app/report.py": 'def monthly_report(rows):\n    """Sum the amounts of each month."""\n    totals = {}\n'
                     '    for row in rows:\n        totals[row.month] = totals.get(row.month, 0) + row.amount\n    return totals\n',
}


def _build(tmp_path, name: str, files: dict[str, str], fixes: list[tuple[dict[str, str], str]]):
    """Index a repository whose root commit holds `files`, then one commit per fix (the history's changed files)."""
    repo = one_commit_repo(tmp_path / name, files)
    for day, (changed, message) in enumerate(fixes, 1):
        commit(repo, changed, message, day)
    config = make_config(tmp_path / f"{name}-index")
    Indexer(config, progress=False).index(str(repo), f"langs/{name}")
    served = Snapshot.open(IndexLayout(config.paths.index_root).current(f"langs/{name}"), config)
    return config, served


def _listed_counts(config, repo: str) -> dict:
    """The `counts` of the repository's row as `/v1/repos` lists it (`IndexLayout.listing`)."""
    (row,) = [entry.to_dict() for entry in IndexLayout(config.paths.index_root).listing() if entry.repo == repo]
    return row["counts"]


def _ranked_files(config, served, query: str, today: list[str]) -> list[str]:
    stage = LearnedStage(config.localizer, config.paths.cache_dir, config.encoder)
    files, _ = stage.apply(query, [served], [{"repo": served.repo, "path": p, "score": 1.0} for p in today], [])
    return [f["path"] for f in files]


@pytest.fixture(scope="module")
def go_repo(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("go"), "clock", GO_FILES, [
        (GO_FIX, "Fix ParseDuration panicking on an empty duration string (#3)"),
        (GO_ALARM_FIX, "Alarm rang one tick early at its exact deadline (#5)"),
    ])


def test_a_go_repository_gets_history_localizer_files_and_function_vectors(go_repo):
    config, served = go_repo
    counts = _listed_counts(config, served.repo)
    assert counts["localizer_files"] == 3  # the .go files (go.mod has no functions)
    assert counts["history_commits"] == 2  # both fixes (the root commit is never kept)
    assert counts["function_vectors"] == 3
    stored = served.index("localizer")
    assert {f.key for f in stored.functions} == {"clock/duration.go::ParseDuration", "clock/alarm.go::Alarm.Ring",
                                                 "clock/zone.go::Offset"}
    records = served.history.history.records
    assert {path for r in records for path in r.files} == {"clock/duration.go", "clock/alarm.go"}


def test_a_query_naming_a_go_functions_behaviour_ranks_its_file_first(go_repo):
    config, served = go_repo
    today = ["clock/zone.go", "clock/alarm.go", "clock/duration.go"]  # today's order puts it last
    ranked = _ranked_files(config, served, "reading a duration string like 5m gives the wrong number of seconds", today)
    assert ranked[0] == "clock/duration.go"


def test_a_typescript_repository_gets_history_localizer_files_and_function_vectors(tmp_path):
    config, served = _build(tmp_path, "ky", TS_FILES, [
        (TS_FIX, "Fix the first retry waiting half the backoff delay (#7)"),
        (TS_HEADERS_FIX, "Keep the source headers when merging options (#9)"),
        (TS_TYPES_FIX, "Allow timeout: false in the options type (#11)"),
    ])
    counts = _listed_counts(config, served.repo)
    assert counts["localizer_files"] == 4  # the type declarations too: a fix may change only them
    assert counts["history_commits"] == 3
    assert counts["function_vectors"] >= 3
    records = served.history.history.records
    assert {path for r in records for path in r.files} == {"source/retry.ts", "source/headers.ts", "source/types.d.ts"}
    assert not any(f.key.startswith("source/types.d.ts") for f in served.index("localizer").functions)


def test_a_cpp_repository_gets_history_localizer_files_and_function_vectors(tmp_path):
    config, served = _build(tmp_path, "ring", CPP_FILES, [(CPP_FIX, "Fix pop() reading garbage from an empty ring (#4)")])
    counts = _listed_counts(config, served.repo)
    assert counts["localizer_files"] == 2  # the header too: a fix may change a declaration
    assert counts["history_commits"] == 1
    assert counts["function_vectors"] == 3
    assert {f.key for f in served.index("localizer").functions} == {
        "src/buffer.cpp::ring.Buffer.Buffer", "src/buffer.cpp::ring.Buffer.push", "src/buffer.cpp::ring.Buffer.pop"}
    assert {path for r in served.history.history.records for path in r.files} == {"src/buffer.cpp"}


def test_on_a_mixed_repository_a_go_file_ranks_above_every_python_file(tmp_path):
    files = {**PY_FILES, **GO_FILES}
    config, served = _build(tmp_path, "mixed", files, [
        (GO_FIX, "Fix ParseDuration panicking on an empty duration string (#3)"),
    ])
    assert served.manifest.counts["localizer_files"] == 6
    today = sorted(PY_FILES) + sorted(p for p in GO_FILES if p.endswith(".go"))  # Python first, as the old blend had it
    ranked = _ranked_files(config, served, "ParseDuration of a duration like 5m returns the wrong seconds", today)
    assert ranked[0] == "clock/duration.go"
    assert ranked.index("clock/duration.go") < min(ranked.index(p) for p in PY_FILES)
