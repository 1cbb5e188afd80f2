"""tools/check_commits.py: commit subjects after a base commit fit in 72
characters, and a base it cannot find is an error, not a pass."""

import importlib.util
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("check_commits", ROOT / "tools" / "check_commits.py")
check_commits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_commits)


def _commit(repo: pathlib.Path, subject: str) -> str:
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", subject], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def test_long_subjects_after_the_base_are_named(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, "x" * 100)  # before the base: not checked
    base = _commit(tmp_path, "base")
    _commit(tmp_path, "y" * 72)
    assert check_commits.problems(tmp_path, base) == []
    _commit(tmp_path, "z" * 73)
    (line,) = check_commits.problems(tmp_path, base)
    assert "73 characters" in line and "z" * 73 in line
    assert check_commits.main(["--repo", str(tmp_path), "--base", base]) == 1


def test_a_missing_base_is_an_error(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    _commit(tmp_path, "only")
    (line,) = check_commits.problems(tmp_path, "a9648d6")
    assert "not in this repository" in line


def test_a_base_off_the_branch_is_an_error(tmp_path):
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    _commit(tmp_path, "root")
    subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "-b", "side"], check=True)
    side = _commit(tmp_path, "side")
    subprocess.run(["git", "-C", str(tmp_path), "checkout", "-q", "main"], check=True)
    (line,) = check_commits.problems(tmp_path, side)
    assert "not an ancestor of HEAD" in line


def test_a_shallow_clone_checks_every_commit_it_holds(tmp_path):
    src = tmp_path / "src"
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    base = _commit(src, "base")
    _commit(src, "w" * 80)
    _commit(src, "fine")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{src}", str(clone)], check=True)
    (line,) = check_commits.problems(clone, base)  # base is cut off; both held commits are checked
    assert "80 characters" in line
    shallow1 = tmp_path / "one"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{src}", str(shallow1)], check=True)
    assert check_commits.problems(shallow1, base) == []
