"""Arithmetic: spoken math -> expression string -> AST -> value. Never ``eval``.

The expression language is numbers, ``+ - * / ^``, postfix ``%`` (percent), the functions
``sqrt`` and ``cbrt``, and parentheses. ``extract_expression`` turns tokens such as
"what is twelve times seven" into ``"12 * 7"``; ``parse`` builds a small AST;
``evaluate`` computes it with guards (division by zero, square root of a negative
number, results too large to say); ``speak`` renders the AST back to words.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .numbers import Token, format_number

MAX_EXPRESSION_CHARS = 200
MAX_MAGNITUDE = 1e100         # results beyond this are not worth saying aloud


class ExpressionError(ValueError):
    """The text is not a well-formed expression."""


class MathError(ValueError):
    """The expression is well formed but has no speakable value; ``kind`` says why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind      # division_by_zero | negative_sqrt | too_large | undefined


@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Unary:
    op: str                   # "-", "%" (percent), "sqrt", "cbrt"
    arg: Node


@dataclass(frozen=True)
class Bin:
    op: str                   # "+", "-", "*", "/", "^"
    left: Node
    right: Node


Node = Num | Unary | Bin

# ---------------------------------------------------------------- words -> symbols
_PHRASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = tuple(sorted((
    (("plus",), ("+",)), (("minus",), ("-",)), (("take", "away"), ("-",)), (("less",), ("-",)),
    (("times",), ("*",)), (("x",), ("*",)), (("multiplied", "by"), ("*",)),
    (("divided", "by"), ("/",)), (("divide", "by"), ("/",)), (("over",), ("/",)),
    (("to", "the", "power", "of"), ("^",)), (("to", "the", "power"), ("^",)),
    (("raised", "to", "the", "power", "of"), ("^",)), (("raised", "to"), ("^",)),
    (("to", "the"), ("^",)), (("power", "of"), ("^",)),
    (("squared",), ("^", "2")), (("cubed",), ("^", "3")),
    (("square", "root", "of"), ("sqrt",)), (("square", "root"), ("sqrt",)),
    (("root", "of"), ("sqrt",)), (("sqrt",), ("sqrt",)),
    (("cube", "root", "of"), ("cbrt",)), (("cube", "root"), ("cbrt",)),
    (("percent", "of"), ("%", "*")), (("percent",), ("%",)), (("per", "cent"), ("%",)),
), key=lambda p: -len(p[0])))
_BY_FIRST: dict[str, list[tuple[tuple[str, ...], tuple[str, ...]]]] = {}
for _words, _syms in _PHRASES:
    _BY_FIRST.setdefault(_words[0], []).append((_words, _syms))
_FILLER = frozenset({"the"})
_PREFIX = (  # (verb, joiner, operator, swap): "add 2 and 3", "subtract 2 from 5"
    ("add", ("and", "to"), "+", False), ("sum", ("and",), "+", False),
    ("subtract", ("from",), "-", True), ("difference", ("and",), "-", False),
    ("multiply", ("by", "and", "times"), "*", False), ("product", ("and",), "*", False),
    ("divide", ("by", "into"), "/", False),
)
_VERBS = frozenset(p[0] for p in _PREFIX)
_NUM_RE = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def _fmt(value: float) -> str:
    text = str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)
    return f"( {text} )" if value < 0 else text


def _symbols(tokens: list[Token]) -> list[str | None]:
    """Map tokens to expression symbols; ``None`` marks a word that ends a run."""
    texts = [t.text for t in tokens]
    out: list[str | None] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.value is not None:
            out.extend(_fmt(tok.value).split())
            i += 1
            continue
        for verb, joiners, op, swap in (_PREFIX if texts[i] in _VERBS else ()):
            k = i + 1 + (1 if texts[i + 1:i + 2] == ["of"] else 0)
            if texts[i] == verb and k + 2 < len(tokens) and (x := tokens[k].value) is not None \
                    and texts[k + 1] in joiners and (y := tokens[k + 2].value) is not None:
                a, b = _fmt(x), _fmt(y)
                out.extend(["(", b, op, a, ")"] if swap else ["(", a, op, b, ")"])
                i = k + 3
                break
        else:
            for words, syms in _BY_FIRST.get(texts[i], ()):
                if tuple(texts[i:i + len(words)]) == words:
                    if words == ("x",) and not (out and out[-1] not in (None,)):
                        continue
                    out.extend(syms)
                    i += len(words)
                    break
            else:
                if texts[i] not in _FILLER:
                    out.append(None)
                i += 1
    return out


def extract_expression(tokens: list[Token]) -> str | None:
    """The longest run of numbers and operators that parses, with at least one operator."""
    syms = _symbols(tokens)
    runs: list[list[str]] = [[]]
    for s in syms:
        if s is None:
            runs.append([])
        else:
            runs[-1].append(s)
    best: str | None = None
    for run in runs:
        if not any(s in ("+", "-", "*", "/", "^", "%", "sqrt", "cbrt") for s in run):
            continue
        if not any(_NUM_RE.fullmatch(s.lstrip("-")) for s in run):
            continue
        text = " ".join(run)
        try:
            parse(text)
        except ExpressionError:
            continue
        if best is None or len(text) > len(best):
            best = text
    return best


# ---------------------------------------------------------------- parser
_LEX = re.compile(r"\s*(?:(\d+(?:\.\d*)?(?:e[+-]?\d+)?|\.\d+)|(sqrt|cbrt)|([-+*/^%()]))")


def _lex(text: str) -> list[str]:
    pos, out = 0, []
    text = text.strip()
    while pos < len(text):
        m = _LEX.match(text, pos)
        if not m or m.end() == pos:
            raise ExpressionError(f"unexpected character {text[pos]!r} at {pos} in {text!r}")
        out.append(m.group(1) or m.group(2) or m.group(3))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


class _Parser:
    def __init__(self, toks: list[str]) -> None:
        self.toks, self.i = toks, 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise ExpressionError("the expression ends too early")
        self.i += 1
        return tok

    def expr(self) -> Node:
        node = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            node = Bin(op, node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while self.peek() in ("*", "/"):
            op = self.take()
            node = Bin(op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            return Unary("-", self.unary())
        if self.peek() == "+":
            self.take()
            return self.unary()
        return self.power()

    def power(self) -> Node:
        node = self.postfix()
        if self.peek() == "^":
            self.take()
            return Bin("^", node, self.unary())
        return node

    def postfix(self) -> Node:
        node = self.primary()
        while self.peek() == "%":
            self.take()
            node = Unary("%", node)
        return node

    def primary(self) -> Node:
        tok = self.take()
        if tok in ("sqrt", "cbrt"):
            return Unary(tok, self.postfix())
        if tok == "(":
            node = self.expr()
            if self.take() != ")":
                raise ExpressionError("a bracket is not closed")
            return node
        if _NUM_RE.fullmatch(tok) or tok[0].isdigit():
            return Num(float(tok))
        raise ExpressionError(f"expected a number, found {tok!r}")


def parse(text: str) -> Node:
    """Parse an expression string (see module doc) into an AST."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    toks = _lex(text)
    if not toks:
        raise ExpressionError("empty expression")
    parser = _Parser(toks)
    node = parser.expr()
    if parser.peek() is not None:
        raise ExpressionError(f"unexpected {parser.peek()!r} after the expression")
    return node


# ---------------------------------------------------------------- evaluation and speech
def _check(value: float) -> float:
    if math.isnan(value):
        raise MathError("undefined", "the result is undefined")
    if math.isinf(value) or abs(value) > MAX_MAGNITUDE:
        raise MathError("too_large", "the result is too large to say")
    return value


def evaluate(node: Node) -> float:
    """Compute ``node``; raise ``MathError`` for a division by zero, a negative square
    root or a result beyond ``MAX_MAGNITUDE``."""
    if isinstance(node, Num):
        return _check(node.value)
    if isinstance(node, Unary):
        x = evaluate(node.arg)
        if node.op == "-":
            return -x
        if node.op == "%":
            return x / 100.0
        if node.op == "sqrt":
            if x < 0:
                raise MathError("negative_sqrt", "a negative number has no real square root")
            return math.sqrt(x)
        return math.copysign(abs(x) ** (1 / 3), x)
    left, right = evaluate(node.left), evaluate(node.right)
    if node.op == "+":
        return _check(left + right)
    if node.op == "-":
        return _check(left - right)
    if node.op == "*":
        return _check(left * right)
    if node.op == "/":
        if right == 0:
            raise MathError("division_by_zero", "division by zero is undefined")
        return _check(left / right)
    if left == 0 and right < 0:
        raise MathError("division_by_zero", "zero to a negative power divides by zero")
    if abs(right) > 1000 or (abs(left) > 1 and right * math.log10(abs(left)) > 100):
        raise MathError("too_large", "the result is too large to say")
    if left < 0 and not float(right).is_integer():
        raise MathError("undefined", "a negative number to a fractional power is not a real number")
    return _check(float(left) ** right)


_OP_WORDS = {"+": "plus", "-": "minus", "*": "times", "/": "divided by", "^": "to the power of"}


def speak(node: Node) -> str:
    """Words for an AST, e.g. ``12 times 7``, ``the square root of 81``, ``15 percent of 80``."""
    if isinstance(node, Num):
        return format_number(node.value, 4)
    if isinstance(node, Unary):
        inner = speak(node.arg)
        return {"-": "minus " + inner, "%": inner + " percent",
                "sqrt": "the square root of " + inner,
                "cbrt": "the cube root of " + inner}[node.op]
    if node.op == "*" and isinstance(node.left, Unary) and node.left.op == "%":
        return f"{speak(node.left)} of {speak(node.right)}"
    if node.op == "^" and isinstance(node.right, Num) and node.right.value in (2, 3):
        return f"{speak(node.left)} {'squared' if node.right.value == 2 else 'cubed'}"
    return f"{speak(node.left)} {_OP_WORDS[node.op]} {speak(node.right)}"
