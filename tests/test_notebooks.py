"Every chapter notebook, executed headlessly by papermill with preset='tiny', as a user's GPU CI would run it."
import os, sys
from pathlib import Path
import pytest
NBS = sorted(p for p in (Path(__file__).resolve().parent.parent / "nbs").glob("[0-9][0-9]_*.ipynb"))

@pytest.mark.parametrize("nb", NBS, ids=[p.stem for p in NBS])
def test_papermill_tiny(nb, tmp_path):
    import papermill as pm
    pm.execute_notebook(str(nb), str(tmp_path / nb.name), parameters=dict(preset="tiny"), cwd=str(nb.parent),
                        kernel_name="python3", progress_bar=False, log_output=False)
    assert (tmp_path / nb.name).exists()
