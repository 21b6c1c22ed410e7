"""genlm-control's streaming JSON checks, in our own code: parsers read a document as it comes.

`json_schema_parser(schema)` builds a parser that refuses a prefix as soon
as no document of the schema starts with it (types, keys, enums, string
patterns); `ParserPotential` runs one over bytes. `FullValidatorJsonSchema`
checks prefixes and documents with `jsonschema`. `JsonSchema`, the one to
use, compiles the schema to a token mask instead (`json.schema`); these are
here for code written against genlm-control's `built_in.json` module.

`text_input` holds the reading position and the sources, `parsers` the
combinators, `schema_parsers` the schema's parsers, `partial_document` what
a prefix already says, `full_validator` and `parser_potential` the two
potentials.
"""

from genlm_lab.control.constraint.json.stream.full_validator import (
    FullValidatorJsonSchema,
    prune_to_validatable_prefix,
)
from genlm_lab.control.constraint.json.stream.parser_potential import ParserPotential
from genlm_lab.control.constraint.json.stream.parsers import (
    BOOL_PARSER,
    FLOAT_PARSER,
    INTEGER_PARSER,
    NULL_PARSER,
    STRING_LITERAL_PARSER,
    WHITESPACE_PARSER,
    AltParser,
    ConstParser,
    FilterParser,
    FixedSetParser,
    FloatParser,
    IntegerParser,
    MapParser,
    Parser,
    RegexParser,
    StringLiteralMatchingPatternParser,
)
from genlm_lab.control.constraint.json.stream.schema_parsers import (
    ARBITRARY_JSON,
    ArraySchemaParser,
    EnumParser,
    ObjectSchemaParser,
    json_schema_parser,
)
from genlm_lab.control.constraint.json.stream.text_input import (
    Incomplete,
    Input,
    ParseError,
    StringSource,
    TrivialSource,
    chunk_to_complete_utf8,
)

__all__ = [
    "ARBITRARY_JSON",
    "BOOL_PARSER",
    "FLOAT_PARSER",
    "INTEGER_PARSER",
    "NULL_PARSER",
    "STRING_LITERAL_PARSER",
    "WHITESPACE_PARSER",
    "AltParser",
    "ArraySchemaParser",
    "ConstParser",
    "EnumParser",
    "FilterParser",
    "FixedSetParser",
    "FloatParser",
    "FullValidatorJsonSchema",
    "Incomplete",
    "Input",
    "IntegerParser",
    "MapParser",
    "ObjectSchemaParser",
    "ParseError",
    "Parser",
    "ParserPotential",
    "RegexParser",
    "StringLiteralMatchingPatternParser",
    "StringSource",
    "TrivialSource",
    "chunk_to_complete_utf8",
    "json_schema_parser",
    "prune_to_validatable_prefix",
]
