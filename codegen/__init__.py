"""The generator: the spec model and loader, the formula language, and the jinja2 renderers.

It never imports aclnngen.generated: generated code is its output, not its input.
"""
