"""Re-check fuzz programs by seed with the current compiler.

    python -m tests.fuzz.replay 11-129 7-1514 ...      # one line per program: seed, outcome
    python -m tests.fuzz.replay --show 11-129          # also the report and generated code

Program k of a campaign `run_fuzz --seed S` has seed f"{S}-{k}".
"""

import argparse
import tempfile

from .programs import check_program, generate


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("seeds", nargs="+")
    parser.add_argument("--show", action="store_true", help="print the full report")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        for seed in args.seeds:
            outcome = check_program(generate(seed), directory)
            print(outcome.report() if args.show else f"{seed} {outcome.status} {outcome.reason}")


if __name__ == "__main__":
    main()
