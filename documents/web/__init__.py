"""End users' web pages for the library: sign-in, upload with progress, retry."""
