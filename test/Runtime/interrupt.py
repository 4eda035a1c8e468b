#!/usr/bin/env python3
"""Stops a training run with signals and checks what it leaves.

  interrupt.py DIR [--one-rank] [--sigint] -- CMD...
    Runs CMD --steps 10^9 --log DIR/log.jsonl --save DIR/ckpt.safetensors
    (stderr to DIR/stop.err), waits until the log holds records while the
    run goes on, sends SIGTERM (SIGINT with --sigint; with --one-rank to
    rank 1 alone, CMD being mpirun) and checks the exit status, that the
    log holds steps 1..N, each line whole, and that the checkpoint holds
    step N. Then
    runs CMD --resume it --steps 3 (DIR/resumed.jsonl) and an uninterrupted
    CMD --steps N+3 (DIR/full.jsonl), for compare_logs.py.

  interrupt.py DIR --kill-rank -- mpirun ... CMD...
    Runs CMD with --save-every 2, waits until the log holds 5 records and
    kills rank 1 (SIGKILL, as a node failure would): the job must stop with
    a non-zero status and no rank left, the log's lines whole, the
    checkpoint whole and of an even step; then resumes from it, as above.

  interrupt.py DIR --twice -- CMD...
    Stops the run (SIGSTOP), sends SIGINT and SIGTERM, lets it go on: the
    second signal ends it at once, by that signal, with the log's lines whole.

Nothing here depends on timing but the time limits (a run that does not
stop fails instead of hanging).
"""
import json
import os
import signal
import struct
import subprocess
import sys
import time

LIMIT_S = 120
# How long a rank may outlive the job that lost another rank.
GONE_S = 10


running = []  # the run, killed (with its process group) on a failure


def fail(message):
    print("FAIL: " + message, flush=True)
    for proc in running:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    sys.exit(1)


def start(cmd, err):
    proc = subprocess.Popen(cmd, stderr=err, start_new_session=True)
    running.append(proc)
    return proc


def records(path):
    """The log's lines, parsed; fails on a line cut short."""
    try:
        text = open(path).read()
    except FileNotFoundError:
        return []
    if text and not text.endswith("\n"):
        fail(f"{path}: last line not whole: {text.splitlines()[-1]!r}")
    return [json.loads(line) for line in text.splitlines()]


def wait_for_records(proc, log, count):
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"the run ended (status {proc.returncode}) before its log "
                 f"held {count} records")
        try:
            with open(log) as f:
                lines = sum(1 for line in f if line.endswith("\n"))
        except FileNotFoundError:
            lines = 0
        if lines >= count:
            if proc.poll() is not None:
                fail("the run ended before it was signalled")
            print(f"log: {count}+ records while the run goes on")
            return
        time.sleep(0.005)
    fail(f"no {count} records in {log} after {LIMIT_S} s")


def rank_process(pid, rank):
    """The child of `pid` (mpirun) that is rank `rank` of its job."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
            environ = open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == pid and f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
            return int(entry)
    fail(f"no rank {rank} among the children of process {pid}")


def wait_for_state(pid, state):
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        stat = open(f"/proc/{pid}/stat").read()
        if stat[stat.rindex(")") + 2] == state:
            return
        time.sleep(0.005)
    fail(f"process {pid} not in state {state} after {LIMIT_S} s")


def wait(proc):
    try:
        return proc.wait(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        fail(f"the run did not stop within {LIMIT_S} s of the signal")


def checkpoint_step(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    return int(json.loads(data[8:8 + n])["__metadata__"]["step"])


def whole_checkpoint(path):
    """Fails unless `path` is a whole safetensors file: its size is the
    header's plus the end of its last tensor."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    end = max(v["data_offsets"][1] for k, v in header.items()
              if k != "__metadata__")
    if len(data) != 8 + n + end:
        fail(f"{path}: {len(data)} bytes, its header describes {8 + n + end}")


def kill_rank(cmd, out, log, ckpt, err):
    proc = start(cmd + ["--steps", "1000000000", "--log", log, "--save", ckpt,
                        "--save-every", "2"], err)
    wait_for_records(proc, log, 5)
    ranks = [rank_process(proc.pid, r) for r in (0, 1)]
    os.kill(ranks[1], signal.SIGKILL)
    status = wait(proc)
    if status == 0:
        fail("the job exited 0 after one of its ranks was killed")
    print("job stopped, exit status non-zero")
    # mpirun may return while the surviving rank is still being torn down
    # (on a loaded machine, for a moment): each rank must be gone, or a
    # zombie, within GONE_S of the job's end.
    for pid in ranks:
        deadline = time.monotonic() + GONE_S
        while True:
            try:
                stat = open(f"/proc/{pid}/stat").read()
            except OSError:
                break
            if stat[stat.rindex(")") + 2] == "Z":
                break
            if time.monotonic() > deadline:
                fail(f"rank process {pid} still runs {GONE_S} s after the "
                     "job ended")
            time.sleep(0.01)
    print("no rank left")
    rows = records(log)
    steps = [r["step"] for r in rows]
    if steps != list(range(1, len(steps) + 1)):
        fail(f"log steps are not 1..N: {steps[:5]} ... {steps[-5:]}")
    whole_checkpoint(ckpt)
    step = checkpoint_step(ckpt)
    if step % 2 or not 2 <= step <= len(steps):
        fail(f"checkpoint holds step {step}, not a --save-every step of "
             f"the log's 1..{len(steps)}")
    print("checkpoint: whole, a --save-every step the log reached")
    subprocess.run(cmd + ["--resume", ckpt, "--steps", "3", "--quiet", "--log",
                          os.path.join(out, "resumed.jsonl")], check=True)
    subprocess.run(cmd + ["--steps", str(step + 3), "--quiet", "--log",
                          os.path.join(out, "full.jsonl")], check=True)


def main():
    args = sys.argv[1:]
    split = args.index("--")
    options, cmd = args[:split], args[split + 1:]
    out = options[0]
    log = os.path.join(out, "log.jsonl")
    ckpt = os.path.join(out, "ckpt.safetensors")
    err = open(os.path.join(out, "stop.err"), "w")

    if "--twice" in options:
        proc = start(cmd + ["--steps", "1000000000", "--quiet", "--log", log],
                     err)
        wait_for_records(proc, log, 3)
        # While it is stopped both stay pending: the first one handled asks
        # for a stop, the second ends the process.
        proc.send_signal(signal.SIGSTOP)
        wait_for_state(proc.pid, "T")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCONT):
            proc.send_signal(sig)
        status = wait(proc)
        if status >= 0:
            fail(f"exit status {status}: the second signal did not end it")
        print("ended by", signal.Signals(-status).name)
        if not records(log):
            fail("empty log")
        print("log: each line whole")
        return

    if "--kill-rank" in options:
        kill_rank(cmd, out, log, ckpt, err)
        return

    proc = start(cmd + ["--steps", "1000000000", "--log", log, "--save", ckpt],
                 err)
    wait_for_records(proc, log, 3)
    target = proc.pid
    if "--one-rank" in options:
        # Not rank 0 (which logs and saves): the others must stop with it.
        target = rank_process(proc.pid, 1)
    os.kill(target, signal.SIGINT if "--sigint" in options else signal.SIGTERM)
    print("exit status", wait(proc))

    rows = records(log)
    steps = [r["step"] for r in rows]
    last = len(steps)
    if steps != list(range(1, last + 1)):
        fail(f"log steps are not 1..{last}: {steps[:5]} ... {steps[-5:]}")
    print("log: steps 1..N, each line whole")
    step = checkpoint_step(ckpt)
    if step != last:
        fail(f"checkpoint holds step {step}, the log's last is {last}")
    print("checkpoint: the log's last step")

    subprocess.run(cmd + ["--resume", ckpt, "--steps", "3", "--quiet", "--log",
                          os.path.join(out, "resumed.jsonl")], check=True)
    subprocess.run(cmd + ["--steps", str(last + 3), "--quiet", "--log",
                          os.path.join(out, "full.jsonl")], check=True)


if __name__ == "__main__":
    main()
