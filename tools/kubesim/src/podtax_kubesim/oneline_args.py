"""An argparse parser whose usage mistakes are one line on stderr and exit 2: argparse's own prints its
whole usage block first (seven lines for podtax-kubesim). The emulators' copy of podtax.oneline_args (this
package does not depend on podtax)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: {message}. Try '{self.prog} --help'.", file=sys.stderr)
        raise SystemExit(2)
