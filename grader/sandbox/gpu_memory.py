"""GPU memory a submission's processes hold, as the NVIDIA driver counts it (NVML).

A GPU's memory is shared by every worker graded on it, and no cgroup or rlimit counts it. The worker caps
PyTorch's allocator (entry.py), which stops a tensor far too large in honest code, but the student's code can
lift that cap, or allocate beside the allocator. So the judge's watchdog also reads, from the driver, what the
submission's processes hold on every GPU, and stops a step that holds more than its share (transport.py).

NVML is read through nvidia-ml-py (`pynvml`), NVIDIA's own binding: the process list and its structures
change between driver versions, which the binding follows and code of our own would not
(docs/sandbox.md, "On a GPU"). Without a driver, or where the driver does not say what a process holds
(some containers), `held_by` answers None and the run relies on the allocator's cap alone.
"""

import threading

# What a worker's CUDA context and the kernels it loads take beyond its tensors (measured on an H200 with
# torch 2.11: about 0.5 GiB); a submission's share of a GPU is its memory limit plus this.
CONTEXT_ALLOWANCE = 1 << 30


class GpuMemory:
    """The driver's figures, for one grading process (its pool owns one; NVML starts on first use)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._nvml = None
        self._handles = None
        self.unavailable = None  # why NVML cannot be read here, once tried

    def _devices(self):
        with self._lock:
            if self._handles is None and self.unavailable is None:
                try:
                    import pynvml

                    pynvml.nvmlInit()
                    self._handles = [pynvml.nvmlDeviceGetHandleByIndex(index)
                                     for index in range(pynvml.nvmlDeviceGetCount())]
                    self._nvml = pynvml
                except Exception as error:  # noqa: BLE001 - no library, no driver, no device: not readable
                    self.unavailable = f"{type(error).__name__}: {error}"[:200]
            return self._handles

    def held_by(self, pids):
        """Bytes of GPU memory the processes `pids` hold on all GPUs together, or None when the driver cannot
        say (no NVML, or a process whose figure it withholds)."""
        handles = self._devices()
        if handles is None:
            return None
        wanted, held = set(pids), 0
        for handle in handles:
            try:
                running = self._nvml.nvmlDeviceGetComputeRunningProcesses(handle)
            except self._nvml.NVMLError:
                return None
            for process in running:
                if process.pid in wanted:
                    if process.usedGpuMemory is None:
                        return None
                    held += process.usedGpuMemory
        return held
