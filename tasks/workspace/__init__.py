"""The workspace suite: a scratch directory per episode, real commands in a bubblewrap sandbox."""
