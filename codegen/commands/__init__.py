"""Subcommands of the `aclnngen` command line, one module each (imported only when run)."""
