"""Doc pages -> draft specs: readers for vendor Markdown and saved web pages, and the draft writer."""
