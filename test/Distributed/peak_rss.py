#!/usr/bin/env python3
"""Peak resident memory of MPI ranks.

  peak_rss.py run PREFIX -- COMMAND...   (under mpirun) runs COMMAND and
      writes its peak RSS in KiB to PREFIX.RANK (OMPI_COMM_WORLD_RANK).
  peak_rss.py compare PREFIX --within MIB
      prints how far rank 0's peak is above rank 1's, and PASS when it is
      within MIB (FAIL, exit 1, otherwise).
Uses only the standard library."""
import os
import resource
import subprocess
import sys


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "run" and sys.argv[3] == "--":
        rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        status = subprocess.run(sys.argv[4:]).returncode
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        with open(f"{sys.argv[2]}.{rank}", "w") as f:
            f.write(f"{peak}\n")
        return status
    if len(sys.argv) == 5 and sys.argv[1] == "compare" and sys.argv[3] == "--within":
        peaks = [int(open(f"{sys.argv[2]}.{r}").read()) for r in (0, 1)]
        above = (peaks[0] - peaks[1]) / 1024
        ok = above <= float(sys.argv[4])
        print(f"rank 0's peak RSS is {above:.0f} MiB above rank 1's: "
              f"{'PASS' if ok else 'FAIL'} (within {sys.argv[4]} MiB)")
        return 0 if ok else 1
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
