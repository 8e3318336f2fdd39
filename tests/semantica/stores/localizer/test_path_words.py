"""A compound file name (`tracinghandler.go`) is split by the names its file defines, so the path field meets a
query that says the words apart."""

from __future__ import annotations

from semantica.stores.localizer.path_words import definition_parts, path_text, split_compound
from semantica.stores.localizer.table import LocalizerTableBuilder

TRACING = """package handler

// TracingHandler returns a middleware that traces the request.
func TracingHandler(serviceName, path string) func(http.Handler) http.Handler {
\treturn func(next http.Handler) http.Handler { return next }
}
"""
ROUTES = """package rest

type featuredRoutes struct{ routes []Route }

func (s *Server) AddRoutes(rs []Route) { s.ngin.addRoutes(featuredRoutes{routes: rs}) }
"""
WHEEL = """package collection

type TimingWheel struct{ interval time.Duration }

func NewTimingWheel(interval time.Duration) (*TimingWheel, error) { return &TimingWheel{interval}, nil }

func (tw *TimingWheel) Stop() {}
"""


def test_a_compound_name_splits_into_the_parts_its_file_defines():
    assert path_text("rest/handler/tracinghandler.go", ["TracingHandler"]) == \
        "rest handler tracinghandler tracing handler"
    assert path_text("core/collection/timingwheel.go", ["TimingWheel", "NewTimingWheel", "TimingWheel.Stop"]) == \
        "core collection timingwheel timing wheel"


def test_no_split_without_the_file_s_own_words():
    parts = definition_parts(["Serve", "handleRequest"])
    assert split_compound("tracinghandler", parts) == []  # "tracing" is not a word of this file
    assert split_compound("handler", parts) == []  # a part itself
    assert split_compound("TracingHandler", definition_parts(["TracingHandler"])) == []  # not a glued lowercase name
    assert path_text("src/server.rs", ["Server", "Server.bind"]) == "src server"


def test_only_a_language_that_glues_file_names_is_split():
    assert path_text("src/_pytest/monkeypatch.py", ["MonkeyPatch", "MonkeyPatch.setattr"]) == "src pytest monkeypatch"
    assert path_text("src/cards/statscard.js", ["StatsCard"]) == "src cards statscard"
    assert path_text("pkg/monkeypatch.go", ["MonkeyPatch"]) == "pkg monkeypatch monkey patch"


def test_the_fewest_parts_win():
    assert split_compound("rpcpubserver", frozenset({"rpc", "pub", "server", "pubserver"})) == ["rpc", "pubserver"]
    assert split_compound("rpcpubserver", definition_parts(["RpcPubServer"])) == ["rpc", "pub", "server"]


def test_the_path_field_finds_the_compound_file_by_its_words():
    table = LocalizerTableBuilder().build({"rest/handler/tracinghandler.go": TRACING, "rest/server.go": ROUTES,
                                           "core/collection/timingwheel.go": WHEEL})
    ids, counts = table.vocab.encode(["tracing", "wheel"])
    hits = {table.files[i].path for i, _ in table.fields["path"].search(ids, counts, 10)}
    assert hits == {"rest/handler/tracinghandler.go", "core/collection/timingwheel.go"}
