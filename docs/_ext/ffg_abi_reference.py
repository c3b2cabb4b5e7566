"""Sphinx extension: the ABI reference, read from ``ffigraph/abi/ffigraph_abi.h`` at build time.

``.. ffg-abi-reference::`` expands to the header's own text, organised: its opening comment, then
every constant (``#define`` and enum), struct (each field with its C type and comment, and the
size and offsets cffi computes for this machine), function type and macro, in the header's
order. Nothing is typed twice: a field added to the header appears here on the next build, and
``abi_reference_rst`` is what tests/tools/test_docs_reference.py checks for completeness.
"""
import os
import re

from ffg_generated import GeneratedRst

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEADER = os.path.join(ROOT, "ffigraph", "abi", "ffigraph_abi.h")


def _comment_text(comment):
    """The text of a /* ... */ comment, its leading stars and indentation removed, lines kept."""
    body = comment.strip()
    body = body[2:-2] if body.startswith("/*") and body.endswith("*/") else body
    lines = [re.sub(r"^\s*\* ?", "", line) if line.strip().startswith("*") else line.strip()
             for line in body.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _join(lines):
    """Comment lines as one line of rst prose (``*``, ``|`` and backquotes escaped: C text)."""
    text = " ".join(line.strip() for line in lines if line.strip())
    return re.sub(r"([*|`_\\])", r"\\\1", text)


def _literal(text):
    """``text`` as an rst inline literal (backquotes cannot occur in C declarations)."""
    return "``%s``" % text.strip() if text.strip() else ""


def parse_header(text):
    """The header as a list of items, in order: ("comment", lines), ("define", name, value, doc),
    ("enum", names, doc), ("struct", name, doc_lines, fields), ("fn", name, decl),
    ("macro", name, definition, doc_lines), ("decl", name, decl, doc_lines).

    Each field is (c_type, name, comment). A comment block directly before a declaration is its
    documentation; a trailing ``/* ... */`` is a field's or a define's."""
    items = []
    pending = []          # the comment lines just above the current line
    lines = text.splitlines()
    i = 0

    def take_comment(start):
        """The comment starting at lines[start], and the index after it."""
        end = start
        while "*/" not in lines[end]:
            end += 1
        return "\n".join(lines[start:end + 1]), end + 1

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("/*") and not stripped.startswith("/* ffigraph-cdef"):
            comment, i = take_comment(i)
            pending = _comment_text(comment)
            if not items:                 # the file's opening comment
                items.append(("comment", pending))
                pending = []
            continue
        if stripped.startswith("#define"):
            full = stripped
            while full.endswith("\\"):
                i += 1
                full = full[:-1].rstrip() + " " + lines[i].strip()
            m = re.match(r"#define\s+(\w+)(\([^)]*\))?\s*(.*)$", full)
            name, params, rest = m.group(1), m.group(2), m.group(3)
            doc = ""
            cm = re.search(r"/\*(.*?)(\*/|$)", rest)
            if cm:
                doc_lines = [cm.group(1)]
                if not cm.group(2):       # the comment goes on below
                    while "*/" not in lines[i]:
                        i += 1
                        doc_lines.append(lines[i].replace("*/", ""))
                doc = _join(doc_lines)
                rest = rest[:cm.start()].strip()
            if name.startswith(("FFIGRAPH_ABI_H", "FFG_CONCAT", "FFG_STATIC_ASSERT", "FFG_EXPORT")):
                pass                      # include guard and the header's own machinery
            elif params or len(rest) > 40:
                items.append(("macro", name + (params or ""), rest, pending))
            else:
                items.append(("define", name, rest, doc, pending))
            pending = []
            i += 1
            continue
        if stripped.startswith("enum {"):
            # the comment above documents the struct the enum's values belong to: it stays pending
            names = re.findall(r"(\w+)\s*=\s*(-?\d+)", stripped)
            items.append(("enum", names, []))
            i += 1
            continue
        m = re.match(r"typedef struct (\w+) \{", stripped)
        if m:
            name = m.group(1)
            fields = []
            i += 1
            while not lines[i].strip().startswith("}"):
                fl = lines[i].strip()
                if not fl:
                    i += 1
                    continue
                decl, _, comment = fl.partition("/*")
                comment_lines = [comment]
                while comment and "*/" not in comment_lines[-1]:
                    i += 1
                    comment_lines.append(lines[i].strip())
                comment = _join(c.replace("*/", "") for c in comment_lines)
                fm = re.match(r"(.*?)\(\*(\w+)\)\((.*)\);$", decl.strip())     # function pointer
                if fm:
                    ctype, fname = "%s(*)(%s)" % (fm.group(1).strip(), fm.group(3)), fm.group(2)
                else:
                    dm = re.match(r"(.*?)(\w+)(\[\w+\])?;$", decl.strip())
                    ctype, fname = dm.group(1).strip() + (dm.group(3) or ""), dm.group(2)
                fields.append((ctype, fname, comment))
                i += 1
            items.append(("struct", name, pending, fields))
            pending = []
            i += 1
            continue
        m = re.match(r"typedef (.*\b(\w+_fn)\b.*);$", stripped)
        if m or (stripped.startswith("typedef") and "_fn" in stripped):
            decl = stripped
            while not decl.endswith(";"):
                i += 1
                decl += " " + lines[i].strip()
            name = re.search(r"\b(\w+_fn)\b", decl).group(1)
            items.append(("fn", name, decl, pending))
            pending = []
            i += 1
            continue
        m = re.match(r"FFG_EXPORT (.*\b(\w+)\(.*\);)$", stripped)
        if m:
            items.append(("decl", m.group(2), m.group(1), pending))
            pending = []
        i += 1
    return items


def _struct_layout(name):
    """(size, {field: offset}) of a struct as cffi lays it out on this machine, or None."""
    try:
        from ffigraph.abi import ffi
        return ffi.sizeof(name), {f: ffi.offsetof(name, f) for f, _ in ffi.typeof(name).fields}
    except Exception:                     # a struct outside the cdef section
        return None


def _paragraphs(lines, indent=""):
    """Comment lines as rst: prose lines joined; lines indented in the comment kept as a literal
    block (the header's small code samples and lists)."""
    out, prose, literal = [], [], []

    def flush():
        if prose:
            lead = "   " if prose[0].startswith("   ") else ""
            out.extend([indent + lead + _join(prose), ""])
            prose.clear()
        if literal:
            out.extend([indent + "::", ""] + [indent + "   " + l for l in literal] + [""])
            literal.clear()

    for line in lines:
        term = re.match(r"^(\w+\([^)]*\))(?:\s{2,}(.*))?$", line)
        if term:                          # "name(args)   what it does": a definition list item
            flush()
            out.extend([indent + "``%s``" % term.group(1)])
            prose.append("   " + (term.group(2) or ""))
            continue
        if prose and prose[0].startswith("   ") and line.startswith("  "):
            prose.append(line)            # the definition goes on
            continue
        if not line.strip():
            flush()
        elif line.startswith("  ") and not line.startswith("   -"):
            if prose:
                flush()
            literal.append(line.rstrip())
        else:
            if literal:
                flush()
            prose.append(line)
    flush()
    return out


def abi_reference_rst(text):
    """The rst of the ABI reference for the header ``text``."""
    out = []
    items = parse_header(text)
    version = dict((it[1], it[2]) for it in items if it[0] == "define")
    out += ["This page is generated from ``ffigraph/abi/ffigraph_abi.h`` (ABI %s.%s, "
            "``FFG_ABI_VERSION`` %s) when the documentation is built. Sizes and offsets are those "
            "of this build machine (LP64)." % (version.get("FFG_ABI_MAJOR"), version.get("FFG_ABI_MINOR"),
                                               version.get("FFG_ABI_VERSION")), ""]
    section = None

    def heading(title):
        out.extend([title, "-" * len(title), ""])

    for item in items:
        kind = item[0]
        if kind == "comment":
            heading("The header's own summary")
            out += ["::", ""] + ["   " + l for l in item[1]] + [""]
        elif kind == "define":
            _, name, value, doc, before = item
            if section != "constants":
                heading("Constants")
                section = "constants"
            if before:
                out += _paragraphs(before)
            out += [".. c:macro:: %s" % name, "", "   Value ``%s``%s" % (value, (": " + doc) if doc else "."), ""]
        elif kind == "enum":
            _, names, before = item
            out += _paragraphs(before)
            for name, value in names:
                out += [".. c:macro:: %s" % name, "", "   Value ``%s``: an enum constant, a value of "
                        "``FfgOutput.alias_of`` (below)." % value, ""]
        elif kind == "struct":
            _, name, before, fields = item
            if section not in ("structs", "table"):
                heading("The function table" if section == "functions" else "Structs")
                section = "table" if section == "functions" else "structs"
            out += [".. c:struct:: %s" % name, ""]
            out += _paragraphs(before, "   ")
            layout = _struct_layout(name)
            if layout:
                out += ["   ``sizeof(%s)`` is %d bytes here." % (name, layout[0]), ""]
            out += ["   .. list-table::", "      :header-rows: 1", "      :widths: 25 15 8 52", "",
                    "      * - type", "        - field", "        - offset", "        - meaning"]
            for ctype, fname, comment in fields:
                offset = str(layout[1].get(fname, "")) if layout else ""
                out += ["      * - %s" % _literal(ctype), "        - ``%s``" % fname,
                        "        - %s" % (offset or "\\"), "        - %s" % (comment or "\\")]
            out.append("")
        elif kind == "fn":
            _, name, decl, before = item
            if section == "table":        # the entry point's own type: it returns the table
                pass
            elif section not in ("functions", "entry"):
                heading("Functions")
                section = "functions"
                out += _paragraphs(before)
            out += [".. c:type:: %s" % name, "", "   ::", "", "      %s" % decl, ""]
        elif kind == "macro":
            _, name, definition, before = item
            if section != "macros":
                heading("Macros")
                section = "macros"
            out += [".. c:macro:: %s" % name, ""]
            out += _paragraphs(before, "   ")
            out += ["   ::", "", "      %s" % re.sub(r"\s+", " ", definition), ""]
        elif kind == "decl":
            _, name, decl, before = item
            if section != "entry":
                heading("The entry point")
                section = "entry"
            out += [".. c:function:: %s" % decl, ""]
            out += _paragraphs(before, "   ")
    return "\n".join(out) + "\n"


class AbiReference(GeneratedRst):
    def source(self):
        return HEADER

    def rst(self):
        with open(HEADER) as fh:
            return abi_reference_rst(fh.read())


def setup(app):
    app.add_directive("ffg-abi-reference", AbiReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
