"""`PythonParser`: Python syntax as a constraint, exact for CPython 3.11.

`potential` is the constraint; `decide` gives its verdicts on text and bytes
from `lexer` (how a text ends: inside which token, on which line), `probe`
(CPython's parser asked whether it wants a token past the text's end),
`escapes` and `fstring` (what an unclosed string literal can still become).
"""

from genlm_lab.control.constraint.python_syntax.decide import Syntax
from genlm_lab.control.constraint.python_syntax.potential import PythonParser

__all__ = ["PythonParser", "Syntax"]
