import os

import matplotlib
import numpy as np
import pytest
import scipy.linalg  # noqa: F401  (loads scipy's own OpenBLAS now, so that the limit below reaches it too)
from threadpoolctl import threadpool_limits

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")
# one BLAS thread per test process (as the CLI): the matrices are small, and on a loaded machine
# threaded BLAS made small solves up to 100x slower (tests/test_lqg.py + test_kalman.py: 16 s -> 5 s)
# (threadpoolctl limits the libraries loaded when it is called: numpy's and scipy's OpenBLAS both are)
threadpool_limits(limits=1, user_api="blas")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
