"""The base of this folder's directives that expand to reStructuredText generated at build time
(the ABI reference, the configuration keys, the table of ffigraph.tensor's names)."""
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles


class GeneratedRst(SphinxDirective):
    """A directive whose content is ``rst()``; ``source()`` names the file it is read from (a
    change to that file rebuilds the page)."""

    has_content = False

    def source(self):
        raise NotImplementedError

    def rst(self):
        raise NotImplementedError

    def run(self):
        source = self.source()
        self.env.note_dependency(source)
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(self.rst().splitlines(), source=source), container)
        return container.children
