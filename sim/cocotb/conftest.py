# Lets each block's test module import the shared runner (sim/cocotb/cocotb_runner.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
