"""Python call resolution through loops, containers, positional locals, local classes, decorated defs and
callbacks: one small real git repository, parsed from its commit like an index build."""

from __future__ import annotations

import textwrap

import pytest

from pipelines.discover import RepoSource
from pipelines.parse import FileParser, GraphResolver
from pipelines.source_files import SourceFile
from semantica.config import ChunkConfig, DiscoverConfig
from semantica.schema import Edge, EdgeType
from tests.dated_git import one_commit_repo

REPO = "test/infer"
FILES = {
    "app/__init__.py": "",
    "app/model.py": """
        import copy
        from typing import Dict, Iterator, List, Optional, Tuple


        class Task:
            def run(self):
                return 1

            def copy(self) -> "Task":
                return Task()

            @classmethod
            def make(cls, name):
                return cls()


        class Batch:
            def __iter__(self) -> Iterator[Task]:
                return iter([])

            def __getitem__(self, i) -> "Task":
                return Task()


        def split() -> Batch:
            return Batch()


        def plain():
            return 0


        REGISTRY = {"task": Task()}


        def from_module_and_with(tasks: List[Task], names):
            REGISTRY["task"].copy()
            with Task.make("w") as held:
                held.run()
            for name, task in zip(names, tasks):
                return task.copy(), name


        class Runner:
            tasks: List[Task]
            named: Dict[str, Task]

            def __init__(self):
                self.queue = []
                self.queue.append(Task())
                self.by_kind = {"a": Task(), "b": Task()}
                self.handlers = {"x": self.on_x}
                self.later: Optional[List[Task]] = None

            def on_x(self):
                return 2

            def loops(self):
                for t in self.tasks:
                    t.run()
                for q in self.queue:
                    q.run()
                for i, e in enumerate(self.tasks):
                    e.copy()
                for k, v in self.named.items():
                    v.run()
                for w in self.named.values():
                    w.copy()

            def containers(self, key: str):
                self.by_kind[key].run()
                self.named.get(key).copy()
                picked = self.queue.pop()
                picked.copy()
                self.handlers[key]()

            def iterates_a_class(self):
                for task in split():
                    task.run()
                return split()[0].copy()

            def positional(self):
                x = Task()
                x.run()
                x = Runner()
                x.on_x()

            def comprehension(self):
                make = Task.make
                made = [make(n) for n in "ab"]
                return [m.run() for m in made]

            def through_self(self):
                t = self.pick()
                return t.run()

            def pick(self):
                return Task()

            def callbacks(self, register):
                register(self.on_x)
                register(callback=plain)
                register(self.pick())

            def pair(self) -> Tuple[str, Task, "Runner"]:
                return "a", Task(), self

            def unpacks(self):
                name, task, runner = self.pair()
                task.run()
                runner.on_x()
                dup = copy.deepcopy(task)
                return dup.copy()

            def nested(self):
                def inner(task: Task):
                    return task.copy()
                return inner
        """,
    "app/cli.py": """
        from app.model import Task


        class Command:
            def invoke(self):
                return 1


        def command():
            def decorator(f) -> Command:
                return Command()
            return decorator


        def command_factory() -> Command:
            return Command()


        class Base:
            def __init__(self):
                self.ready = True


        class Derived(Base):
            pass


        def build():
            return Derived(), Base()


        def test_local_subclass():
            class Special(Task):
                def run(self):
                    return super().run()
            return Special


        def test_decorated():
            @command_factory()
            def cli():
                return 42
            return cli.invoke()
        """,
}
M = "app/model.py::"


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> list[Edge]:
    root = one_commit_repo(tmp_path_factory.mktemp("infer") / "repo",
                           {name: textwrap.dedent(text).lstrip("\n") for name, text in FILES.items()})
    src = RepoSource(str(root), "HEAD", DiscoverConfig())
    entries, _ = src.entries()
    parser = FileParser(ChunkConfig())
    parsed = [parser.parse(REPO, f) for f in src.read(entries) if isinstance(f, SourceFile)]
    return GraphResolver().resolve(parsed)


def calls(edges: list[Edge]) -> dict[tuple[str, str], str]:
    return {(e.src, e.dst): e.resolution for e in edges if e.type == EdgeType.CALLS.value and e.resolved}


def sites(edges: list[Edge], src: str, dst: str) -> list[int]:
    """Every line of the resolved call src -> dst (each call site is kept)."""
    return next((e.sites for e in edges if (e.src, e.dst, e.type) == (src, dst, EdgeType.CALLS.value)), [])


def line_of(snippet: str, path: str = "app/model.py") -> int:
    lines = textwrap.dedent(FILES[path]).lstrip("\n").splitlines()
    [number] = [n for n, text in enumerate(lines, 1) if text.strip() == snippet]
    return number


def test_loop_variables_take_the_element_type(edges: list[Edge]) -> None:
    how, src = calls(edges), M + "Runner.loops"
    assert how[(src, M + "Task.run")] == "type"
    # list[Task] annotation, a list filled with .append(Task()), Dict[str, Task].items()
    assert sites(edges, src, M + "Task.run") == [line_of("t.run()"), line_of("q.run()"), line_of("v.run()")]
    # enumerate(list[Task]), dict.values()
    assert sites(edges, src, M + "Task.copy") == [line_of("e.copy()"), line_of("w.copy()")]
    assert how[(M + "Runner.iterates_a_class", M + "Task.run")] == "type"  # Batch.__iter__ -> Iterator[Task]
    assert how[(M + "Runner.comprehension", M + "Task.run")] == "type"  # [make(n) ...], make = Task.make -> cls()


def test_module_containers_with_and_zip(edges: list[Edge]) -> None:
    how, src = calls(edges), M + "from_module_and_with"
    assert how[(src, M + "Task.copy")] == "type"
    # REGISTRY = {"task": Task()} at module level; zip(names, tasks)
    assert sites(edges, src, M + "Task.copy") == [line_of('REGISTRY["task"].copy()'), line_of("return task.copy(), name")]
    assert sites(edges, src, M + "Task.run") == [line_of("held.run()")]  # with Task.make() as held (cls())


def test_values_taken_from_containers(edges: list[Edge]) -> None:
    how, src = calls(edges), M + "Runner.containers"
    assert how[(src, M + "Task.run")] == "type"  # {"a": Task()}[key]
    assert sites(edges, src, M + "Task.copy") == [line_of("self.named.get(key).copy()"), line_of("picked.copy()")]
    assert how[(src, M + "Runner.on_x")] == "type"  # self.handlers[key]() with handlers = {"x": self.on_x}
    assert how[(M + "Runner.iterates_a_class", M + "Task.copy")] == "type"  # Batch.__getitem__ -> Task


def test_locals_bind_by_position_and_through_self_methods(edges: list[Edge]) -> None:
    how = calls(edges)
    assert sites(edges, M + "Runner.positional", M + "Task.run") == [line_of("x.run()")]  # x = Task() above
    assert how[(M + "Runner.positional", M + "Runner.on_x")] == "type"  # x = Runner() above the second
    assert how[(M + "Runner.through_self", M + "Task.run")] == "type"  # t = self.pick(), pick returns Task()
    assert how[(M + "Runner.nested", M + "Task.copy")] == "type"  # a nested def's annotated parameter
    assert how[(M + "Runner.unpacks", M + "Task.run")] == "type"  # item 1 of Tuple[str, Task, Runner]
    assert how[(M + "Runner.unpacks", M + "Runner.on_x")] == "type"  # item 2
    assert how[(M + "Runner.unpacks", M + "Task.copy")] == "type"  # copy.deepcopy(task) is a Task


def test_super_in_a_local_class_and_decorated_local_def(edges: list[Edge]) -> None:
    how = calls(edges)
    assert how[("app/cli.py::test_local_subclass", M + "Task.run")] == "inheritance"
    assert how[("app/cli.py::test_decorated", "app/cli.py::Command.invoke")] == "type"


def test_a_class_without_its_own_init_is_what_its_construction_calls(edges: list[Edge]) -> None:
    how = calls(edges)
    assert how[("app/cli.py::build", "app/cli.py::Derived")] == "local"  # "who calls Derived" finds it
    assert how[("app/cli.py::build", "app/cli.py::Base.__init__")] == "local"  # Base() runs its own __init__
    assert sum(1 for src, dst in how if src == "app/cli.py::build") == 2


def test_callbacks_are_references_not_calls(edges: list[Edge]) -> None:
    refs = {(e.src, e.dst): e.resolution for e in edges if e.type == EdgeType.REFERENCES.value}
    src = M + "Runner.callbacks"
    assert refs[(src, M + "Runner.on_x")] == "self"
    assert (src, M + "plain") in refs
    assert (src, M + "Runner.on_x") not in calls(edges)
    assert (src, M + "Runner.pick") in calls(edges)  # called, not passed: stays a call
