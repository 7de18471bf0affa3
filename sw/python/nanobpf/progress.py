"""Long runs of outside tools (Vivado, yosys) with progress shown: each stage the tool announces is
printed with the elapsed time as it starts, and a heartbeat line when nothing was shown for a while, so
a user watching a half-hour synthesis knows it is alive and where it is."""
import re
import subprocess
import threading
import time


def run_with_heartbeat(cmd, *, cwd, tag, stage, log, copy_log=False, t0=None, heartbeat_s=60, tail_lines=30):
    """Run `cmd` in `cwd`, its standard output and error merged. `stage`: a regular expression whose
    first group names a stage in an output line; `tag`: the prefix of the lines printed ("[synth]");
    `log`: the tool's log file, named in the heartbeat (with `copy_log` the output is written to it
    here). Returns (exit code, the last `tail_lines` lines of output). Ctrl-C stops the tool too."""
    t0 = time.time() if t0 is None else t0
    state = {"stage": "starting", "shown": time.time(), "tail": []}
    pattern = re.compile(stage)

    def pump(p, out):
        for line in p.stdout:
            if out:
                out.write(line)
            state["tail"] = (state["tail"] + [line.rstrip("\n")])[-tail_lines:]
            m = pattern.match(line)
            if m:
                state["stage"] = m[1].strip()
                print(f"{tag} {time.time() - t0:6.0f}s  {state['stage']}", flush=True)
                state["shown"] = time.time()
        if out:
            out.close()

    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         errors="replace")
    reader = threading.Thread(target=pump, args=(p, open(log, "w") if copy_log else None), daemon=True)
    reader.start()
    try:
        while reader.is_alive():
            reader.join(timeout=min(2.0, heartbeat_s / 4))
            if time.time() - state["shown"] >= heartbeat_s:
                print(f"{tag} {time.time() - t0:6.0f}s  still running ({state['stage']}; log: {log})", flush=True)
                state["shown"] = time.time()
    except KeyboardInterrupt:
        p.terminate()
        p.wait()
        raise
    return p.wait(), state["tail"]
