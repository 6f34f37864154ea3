#!/usr/bin/env python3
"""tools/device_trim.sh in a scratch git repository: "on" leaves all but the
KEEP newest bench/h200-* entries out of the index and lists them in
.git/info/exclude (files stay on disk), refuses a second "on", staged
changes and a bad KEEP; "off" restores the index and the exclude file
exactly."""
import os
import shutil
import subprocess
import sys
import tempfile

from tcheck import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIM = os.path.join(ROOT, "tools", "device_trim.sh")
check = Checks()


def sh(repo, *args, ok=True):
    r = subprocess.run(list(args), cwd=repo, capture_output=True, text=True)
    if ok and r.returncode != 0:
        raise RuntimeError(f"{args}: rc={r.returncode}\n{r.stdout}{r.stderr}")
    return r


def tracked(repo):
    return sorted(sh(repo, "git", "ls-files").stdout.split())


def main():
    if shutil.which("git") is None:
        print("SKIP: no git")
        return 0
    with tempfile.TemporaryDirectory() as repo:
        sh(repo, "git", "init", "-q")
        sh(repo, "git", "config", "user.email", "t@example.invalid")
        sh(repo, "git", "config", "user.name", "t")
        os.makedirs(os.path.join(repo, "tools"))
        shutil.copy(TRIM, os.path.join(repo, "tools", "device_trim.sh"))
        names = ["h200-2026-11-30-device_check.log", "h200-2026-11-30b", "h200-2026-12-01",
                 "h200-2026-12-05", "h200-2026-12-05b", "h200-2026-12-06"]
        for n in names:
            p = os.path.join(repo, "bench", n)
            if n.endswith(".log"):
                os.makedirs(os.path.dirname(p), exist_ok=True)
                open(p, "w").write("log\n")
            else:
                os.makedirs(p)
                open(os.path.join(p, "a.txt"), "w").write(n + "\n")
        open(os.path.join(repo, "bench", "RESULTS.md"), "w").write("r\n")
        os.makedirs(os.path.join(repo, ".git", "info"), exist_ok=True)
        exclude = os.path.join(repo, ".git", "info", "exclude")
        open(exclude, "w").write("# mine\n/build\n")
        sh(repo, "git", "add", "-A")
        sh(repo, "git", "commit", "-q", "-m", "init")
        before = tracked(repo)

        r = sh(repo, "tools/device_trim.sh", "on", "2")
        now = tracked(repo)
        kept = [f for f in now if f.startswith("bench/h200-")]
        check(kept == ["bench/h200-2026-12-05b/a.txt", "bench/h200-2026-12-06/a.txt"], f"kept {kept}")
        check("bench/RESULTS.md" in now and "tools/device_trim.sh" in now, "other files stay tracked")
        ex = open(exclude).read()
        check(ex.startswith("# mine\n/build\n") and "/bench/h200-2026-11-30b\n" in ex
              and "/bench/h200-2026-11-30-device_check.log\n" in ex and "/bench/h200-2026-12-06" not in ex,
              f"exclude while on: {ex!r}")
        check(os.path.exists(os.path.join(repo, "bench", "h200-2026-12-01", "a.txt")), "files stay on disk")
        st = sh(repo, "git", "status", "--porcelain").stdout
        check("??" not in st, f"left-out logs are ignored, not untracked: {st!r}")
        check("MiB of 64" in r.stdout, "prints what the call carries")
        check(sh(repo, "tools/device_trim.sh", "status").stdout.strip() == "device_trim: on", "status on")
        check(sh(repo, "tools/device_trim.sh", "on", ok=False).returncode == 1, "a second on is refused")

        sh(repo, "tools/device_trim.sh", "off")
        check(tracked(repo) == before, "off restores the index")
        check(open(exclude).read() == "# mine\n/build\n", "off restores the exclude file")
        check(sh(repo, "git", "status", "--porcelain").stdout == "", "clean after off")
        check(sh(repo, "tools/device_trim.sh", "status").stdout.strip() == "device_trim: off", "status off")

        open(os.path.join(repo, "bench", "RESULTS.md"), "a").write("more\n")
        sh(repo, "git", "add", "bench/RESULTS.md")
        r = sh(repo, "tools/device_trim.sh", "on", ok=False)
        check(r.returncode == 1 and "staged" in r.stderr, "staged changes are refused")
        sh(repo, "git", "reset", "-q")
        r = sh(repo, "tools/device_trim.sh", "on", "x", ok=False)
        check(r.returncode == 2 and "KEEP" in r.stderr, "a bad KEEP is refused")
        r = sh(repo, "tools/device_trim.sh", "bogus", ok=False)
        check(r.returncode == 2 and "usage" not in r.stdout and "device_trim.sh on" in r.stderr,
              "an unknown command prints the usage to stderr")
        r = sh(repo, "tools/device_trim.sh", "on", "10")
        check("nothing to leave out" in r.stdout and tracked(repo) == before, "KEEP >= entries: no change")
        check(sh(repo, "tools/device_trim.sh", "status").stdout.strip() == "device_trim: off", "still off")
    print(f"{__file__}: {check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
