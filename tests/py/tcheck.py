"""The pass / fail counter the Python tests share: `check = Checks()`, then
`check(cond, msg)` counts a check and prints a FAIL line when cond is false;
`check.passed` and `check.failed` go into the test's last line."""


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def __call__(self, cond, msg):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", msg, flush=True)
