"""The view stage: ``surfbench view RUN...``, a local read-only web viewer over run folders.

What it reads: the run folders only, through the typed reader (``surfbench.load``) and the transcripts
(bench/store/transcripts.py). What it shows (bench/report/viewer_links.py names the pages): the runs and their
cells (``index``), a cell's episodes (``index``, ``pages``), one episode step by step (``episode_page``, ``pages``), a
task on every cell side by side and an operation's tasks (``compare_pages``). ``view_server`` serves them on 127.0.0.1
(standard library ``http.server``) or writes them as static files (``--export``); ``viewer.css`` and
``viewer.js`` are served from the package, nothing from the network.
"""
