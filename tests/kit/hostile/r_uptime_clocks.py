"""Red team 2 (host information, the machine's uptime and boot time): the sandbox masks /proc/uptime and
refuses sysinfo, but clock_gettime(CLOCK_BOOTTIME) and CLOCK_MONOTONIC (no time namespace), times()
(clock ticks since boot) and a process's start time in /proc/self/stat say the same thing; with the wall
clock they give the boot time. Puts them into what a student reads. Marker: RTEAM2-UPTIME.

base: clean
class: 5
run: main
"""

import os as _os
import time as _time


def _facts():
    boot = _time.clock_gettime(_time.CLOCK_BOOTTIME)
    found = [f"uptime {boot:.0f} s (booted at {_time.time() - boot:.0f})",
             f"monotonic {_time.clock_gettime(_time.CLOCK_MONOTONIC):.0f} s",
             f"times() {_os.times().elapsed:.0f} s"]
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        found.append(f"started {ticks / _os.sysconf('SC_CLK_TCK'):.0f} s after boot")
    except (OSError, ValueError, IndexError) as error:
        found.append(f"/proc/self/stat: {error!r}")
    return "RTEAM2-UPTIME " + "; ".join(found)


def causal_attention_weights(scores, d_k):
    raise ValueError(_facts())


def dot_product_variance(dim, num_trials=1000, seed=0):
    return _facts(), _facts()
