"""No tables of core's own: ``Organization``, ``OrganizationMember`` and ``ApiKey``
keep their ``documents`` tables and migrations (moving a model between apps would
rewrite data for no gain); the kernel's logic about them lives here in core.

The module exists because Django sends ``post_migrate`` only to apps that have
one, and core creates the rate limits' cache table then (``core.apps``).
"""
