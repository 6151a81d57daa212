import sys
from pathlib import Path

# cocotb modules and test-only compositions live beside the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
