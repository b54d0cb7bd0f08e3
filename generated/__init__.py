"""Output of `aclnngen generate`. Nothing here is edited by hand."""
