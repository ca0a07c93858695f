"""The forge backend: a Gitea-like forge in memory, 96 operations over a seeded scenario.

Each ``@operation`` method is one catalog operation: its signature and docstring are the schema the
surfaces show (imported by surfbench's python-callables importer), so the catalog and the backend
cannot drift. Operation and parameter names follow Gitea's API (owner/repo/index ...); the
descriptions are ours. Traffic weights: the 15 hottest operations carry 70% of the weight (the dsh
seed's measurement); the other 81 share the remaining 30%.

The operations live in ``ops/``, one mixin per category (``ops/base.py`` holds the store and the
lookups they share); this module only composes them.
"""

from __future__ import annotations

from surfbench.tasks.forge.ops.accounts import AccountOps
from surfbench.tasks.forge.ops.branches import BranchOps
from surfbench.tasks.forge.ops.collaborators import CollaboratorOps
from surfbench.tasks.forge.ops.comments import CommentOps
from surfbench.tasks.forge.ops.contents import ContentOps
from surfbench.tasks.forge.ops.issues import IssueOps
from surfbench.tasks.forge.ops.labels import LabelOps
from surfbench.tasks.forge.ops.pulls import PullOps
from surfbench.tasks.forge.ops.releases import ReleaseOps
from surfbench.tasks.forge.ops.repos import RepoOps
from surfbench.tasks.forge.ops.webhooks import HookOps


# The catalog lists operations base classes first (bench.contracts.backend.operation_methods walks the MRO from
# the far end), so the mixins stand here in reverse catalog order: repositories come first, last.
class ForgeBackend(
    HookOps,
    CollaboratorOps,
    AccountOps,
    ReleaseOps,
    PullOps,
    LabelOps,
    CommentOps,
    IssueOps,
    ContentOps,
    BranchOps,
    RepoOps,
):
    """In-memory forge. ``state()`` is the whole store (final-state checks read it)."""
