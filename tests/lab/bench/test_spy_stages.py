"""lab.bench.spy_stages: shares of a py-spy raw profile under a parent frame, on the scale run's own profile."""

from __future__ import annotations

from pathlib import Path

from lab.bench.spy_stages import frame_names, stages

PROFILE = Path(__file__).resolve().parents[3] / "lab" / "results" / "scale" / "spring" / "fixed" / "first_phase.pyspy.raw"


def test_frame_names_drop_the_file_and_line():
    assert frame_names("<module> (jobs/cli.py:119);Indexer._publish (pipelines/indexer.py:424)") == [
        "<module>", "Indexer._publish"]


def test_children_of_a_parent_are_shares_of_every_sample(tmp_path):
    raw = tmp_path / "p.raw"
    raw.write_text("main (a.py:1);Indexer._publish (b.py:2);GraphResolver.resolve (c.py:3) 3\n"
                   "main (a.py:1);Indexer._publish (b.py:2);SnapshotWriter.write (d.py:4);x (e.py:5) 1\n"
                   "main (a.py:1);idle (f.py:6) 4\n")
    got = stages(raw, ["Indexer._publish"])
    assert got["samples"] == 8
    assert got["under"]["Indexer._publish"] == {"GraphResolver.resolve": 0.375, "SnapshotWriter.write": 0.125}


def test_the_spring_first_phase_profile_is_mostly_the_publish():
    got = stages(PROFILE, ["Indexer._publish"])
    assert got["samples"] > 1000
    assert sum(got["under"]["Indexer._publish"].values()) > 0.8
