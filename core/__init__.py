"""The shared kernel every app builds on: which organization a caller acts for
(tenancy), who the caller is (``Caller``), API keys and REST authentication, the
rate limits, the one REST error shape with the ``DomainRejected`` refusals it maps,
and the admin's scoping to an officer's organizations.

It depends on no app but ``documents``, whose tables hold the organizations,
memberships and API keys; every other app may depend on it.
"""
