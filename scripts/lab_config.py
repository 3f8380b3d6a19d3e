# `make lab` passes this to JupyterLab: the checkout's notebooks/ are saved without outputs
# (decoy_lab/workbench/notebook/clean.py says why a save hook and not a git filter).
c = get_config()  # noqa: F821 (jupyter's config loader provides it)
c.FileContentsManager.pre_save_hook = "decoy_lab.workbench.notebook.clean.pre_save_hook"
