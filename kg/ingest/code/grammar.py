"""What each language's tree-sitter grammar calls the things the extractor looks for.

One :class:`Grammar` per language: a query (run in C, so Python only sees the few nodes that
matter, never the whole tree) and the node types and fields the extractor reads. The grammars
come compiled in the ``tree-sitter-language-pack`` wheel (0.x: every grammar is bundled; the
1.x line downloads grammars at run time, which this product must not do).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Parser, Query
from tree_sitter_language_pack import get_language, get_parser

# Captures: @class / @function (a definition), @call / @new (with @callee), @import,
# @assign (with @lhs), @comment, @param (a typed parameter).
_PYTHON = """
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(call function: (_) @callee) @call
(import_statement) @import
(import_from_statement) @import
(assignment left: (_) @lhs) @assign
(comment) @comment
(typed_parameter) @param
(typed_default_parameter) @param
"""

_JS_COMMON = """
(class_declaration name: (_) @name) @class
(class name: (_) @name) @class
(function_declaration name: (identifier) @name) @function
(generator_function_declaration name: (identifier) @name) @function
(method_definition name: (_) @name) @function
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)])
  @function
(call_expression function: (_) @callee) @call
(new_expression constructor: (_) @callee) @new
(import_statement) @import
(variable_declarator name: (identifier) @lhs) @assign
(assignment_expression left: (_) @lhs) @assign
(comment) @comment
"""

_TS_EXTRA = """
(abstract_class_declaration name: (_) @name) @class
(interface_declaration name: (_) @name) @class
(enum_declaration name: (_) @name) @class
(method_signature name: (_) @name) @function
(abstract_method_signature name: (_) @name) @function
(required_parameter) @param
(optional_parameter) @param
(public_field_definition) @assign
"""

_GO = """
(type_spec name: (type_identifier) @name type: [(struct_type) (interface_type)]) @class
(function_declaration name: (identifier) @name) @function
(method_declaration name: (field_identifier) @name) @function
(method_elem name: (field_identifier) @name) @function
(call_expression function: (_) @callee) @call
(import_spec) @import
(comment) @comment
(parameter_declaration) @param
(short_var_declaration) @assign
(package_clause) @package
"""

_RUST = """
(struct_item name: (type_identifier) @name) @class
(enum_item name: (type_identifier) @name) @class
(trait_item name: (type_identifier) @name) @class
(union_item name: (type_identifier) @name) @class
(impl_item) @impl
(function_item name: (identifier) @name) @function
(function_signature_item name: (identifier) @name) @function
(call_expression function: (_) @callee) @call
(use_declaration) @import
(let_declaration pattern: (identifier) @lhs) @assign
(line_comment) @comment
(block_comment) @comment
(parameter) @param
"""

_JAVA = """
(class_declaration name: (identifier) @name) @class
(interface_declaration name: (identifier) @name) @class
(enum_declaration name: (identifier) @name) @class
(record_declaration name: (identifier) @name) @class
(method_declaration name: (identifier) @name) @function
(constructor_declaration name: (identifier) @name) @function
(method_invocation) @call
(object_creation_expression type: (_) @callee) @new
(import_declaration) @import
(local_variable_declaration) @assign
(field_declaration) @assign
(line_comment) @comment
(block_comment) @comment
(formal_parameter) @param
(package_declaration) @package
"""


@dataclass(frozen=True, slots=True)
class Grammar:
    name: str
    query_text: str
    body_fields: tuple[str, ...] = ("body",)
    self_names: frozenset[str] = frozenset({"self", "cls", "this"})
    # Node types whose text is a plain name, and (left field, right field) of dotted ones.
    name_types: frozenset[str] = frozenset(
        {
            "identifier",
            "type_identifier",
            "field_identifier",
            "property_identifier",
            "package_identifier",
            "this",
            "self",
            "super",
            "private_property_identifier",
        }
    )
    dotted_types: dict[str, tuple[str, str]] = field(default_factory=dict)
    interface_types: frozenset[str] = frozenset()
    # Languages where a bare call may only mean a name of this file or an imported one.
    module_scoped: bool = True


GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        "python",
        _PYTHON,
        dotted_types={"attribute": ("object", "attribute")},
        self_names=frozenset({"self", "cls"}),
    ),
    "javascript": Grammar(
        "javascript",
        _JS_COMMON,
        dotted_types={"member_expression": ("object", "property")},
        self_names=frozenset({"this"}),
    ),
    "typescript": Grammar(
        "typescript",
        _JS_COMMON + _TS_EXTRA,
        dotted_types={"member_expression": ("object", "property")},
        self_names=frozenset({"this"}),
        interface_types=frozenset({"interface_declaration"}),
    ),
    "tsx": Grammar(
        "tsx",
        _JS_COMMON + _TS_EXTRA,
        dotted_types={"member_expression": ("object", "property")},
        self_names=frozenset({"this"}),
        interface_types=frozenset({"interface_declaration"}),
    ),
    "go": Grammar(
        "go",
        _GO,
        dotted_types={"selector_expression": ("operand", "field")},
        self_names=frozenset(),
        interface_types=frozenset({"interface_type"}),
        module_scoped=False,
    ),
    "rust": Grammar(
        "rust",
        _RUST,
        dotted_types={
            "field_expression": ("value", "field"),
            "scoped_identifier": ("path", "name"),
        },
        self_names=frozenset({"self"}),
        interface_types=frozenset({"trait_item"}),
    ),
    "java": Grammar(
        "java",
        _JAVA,
        dotted_types={"field_access": ("object", "field")},
        self_names=frozenset({"this"}),
        interface_types=frozenset({"interface_declaration"}),
        module_scoped=False,
    ),
}


@cache
def language(name: str) -> Language:
    return get_language(name)  # type: ignore[arg-type]


@cache
def parser(name: str) -> Parser:
    return get_parser(name)  # type: ignore[arg-type]


@cache
def query(name: str) -> Query:
    return Query(language(name), GRAMMARS[name].query_text)
