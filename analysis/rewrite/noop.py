"""Is a rewrite only the input query written differently? Decided on sqlglot syntax trees.

``is_noop(input_sql, rewrite_sql, dialect)`` parses both, brings each tree to a canonical form and
compares the trees. These differences are ignored:

* whitespace, line breaks, keyword case, comments, redundant parentheses (the tree already holds the
  grouping), optional keywords sqlglot keeps apart (``INNER JOIN``/``JOIN``, ``LEFT OUTER``/``LEFT``,
  an explicit ``ASC``), and the case of function names;
* identifier quoting where it does not change the name in the dialect: in dialects that fold
  unquoted names (PostgreSQL lower-case, Snowflake/Oracle upper-case) names are compared after
  folding, so ``"foo"`` equals ``foo`` but ``"Foo"`` does not; elsewhere quoted and unquoted spell
  the same name (MySQL backticks). Quoting a niladic function name (``"user"`` vs ``user``) is a
  change: unquoted it calls the function;
* relation names: table aliases, derived-table and LATERAL/UNNEST aliases and CTE names renamed
  consistently (``FROM t AS a ... a.x`` equals ``FROM t AS b ... b.x``, and ``FROM t`` equals
  ``FROM t AS t``). Each alias, and apart from them each CTE name, is replaced by its order of
  first introduction in the tree; sqlglot's scope analysis tells which table names are CTE
  references. Relation names (tables,
  aliases, CTEs) are compared case-insensitively where the dialect resolves them so (DuckDB,
  SQLite, Spark);
* ``x AS x``, a projected column aliased to its own name.

Column aliases are *not* canonicalized: a projected alias names an output column, and output
column names are part of the result, so renaming one is a real change; an inner one is referenced
by unqualified names that cannot be told apart from base-table columns without a schema. Column
names keep their case outside the folding dialects, because DuckDB, SQLite, MySQL and Spark report
output names as written. The detector is conservative: it may miss a no-op (a relation name reused
in two scopes and renamed in only one, a CTE name that shadows a table, a qualifier that is not a
relation name such as a struct field, a column alias rename, a reordered join, ...), but a semantic
change -- a predicate, a join order sqlglot keeps, an added DISTINCT -- is never reported as one.
One limitation: SQLite and MySQL name an unaliased computed column after its text, so reformatting
``SELECT a+1`` changes that name; such names are not compared.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import NormalizationStrategy
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers
from sqlglot.optimizer.scope import traverse_scope

from polysql.core.errors import ConfigError

__all__ = ["is_noop"]

# bare words engines read as function calls (SQL's niladic functions): quoting them changes meaning
_NILADIC = frozenset(
    "user current_user session_user system_user current_role current_catalog current_schema "
    "current_path current_date current_time current_timestamp localtime localtimestamp".split()
)
_FOLDING = (NormalizationStrategy.LOWERCASE, NormalizationStrategy.UPPERCASE)


def _dialect(name: str) -> sqlglot.Dialect:
    try:
        return sqlglot.Dialect.get_or_raise(name)
    except ValueError as error:
        raise ConfigError(f"unknown SQL dialect {name!r}: {error}") from error


def _parse(sql: str, dialect: str) -> list[exp.Expression] | None:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (SqlglotError, RecursionError):  # RecursionError: nesting too deep to follow
        return None
    # exp.Command is sqlglot keeping text it could not read: nothing to compare
    if not statements or any(isinstance(s, exp.Command) for s in statements):
        return None
    return statements


def _dfs(root: exp.Expression) -> Iterator[exp.Expression]:
    """Pre-order walk with arguments in sorted key order: the order depends on the tree alone."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        children: list[exp.Expression] = []
        for key in sorted(node.args):
            value = node.args[key]
            children.extend(
                v
                for v in (value if isinstance(value, list) else [value])
                if isinstance(v, exp.Expression)
            )
        stack.extend(reversed(children))


# -- canonical form ----------------------------------------------------------------------------


_RELATION_PARTS = {exp.Table: ("this", "db", "catalog"), exp.Column: ("table", "db", "catalog")}


def _relation_identifiers(root: exp.Expression) -> Iterator[exp.Identifier]:
    """Identifiers that name relations: tables, their qualifiers, aliases, CTE names."""
    for node in root.walk():
        if isinstance(node, exp.TableAlias):
            parts = [node.this]
        else:
            parts = [node.args.get(key) for key in _RELATION_PARTS.get(type(node), ())]
        yield from (part for part in parts if isinstance(part, exp.Identifier))


def _normalize_names(root: exp.Expression, dialect: sqlglot.Dialect) -> exp.Expression:
    strategy = dialect.normalization_strategy
    if strategy in _FOLDING:
        return normalize_identifiers(root, dialect=dialect)
    if strategy is NormalizationStrategy.CASE_INSENSITIVE:
        # relation names resolve case-insensitively there; column names stay as written because
        # they surface as output column names
        for identifier in list(_relation_identifiers(root)):
            identifier.set("this", identifier.this.lower())
    return root


def _drop_self_aliases(root: exp.Expression) -> None:
    for alias in list(root.find_all(exp.Alias)):
        target = alias.this
        if (
            isinstance(alias.parent, exp.Select)
            and alias.arg_key == "expressions"
            and isinstance(target, exp.Column)
            and isinstance(target.this, exp.Identifier)
            and target.this.this == alias.alias
        ):
            alias.replace(target)


def _add_implicit_aliases(root: exp.Expression) -> None:
    """``FROM t`` binds the name t exactly as ``FROM t AS t`` does."""
    for table in list(root.find_all(exp.Table)):
        if not table.args.get("alias") and isinstance(table.this, exp.Identifier):
            table.set("alias", exp.TableAlias(this=table.this.copy()))


def _cte_references(root: exp.Expression) -> set[int]:
    return {
        id(table)
        for scope in traverse_scope(root)
        for table in scope.tables
        if not table.args.get("db") and table.name in scope.cte_sources
    }


@dataclass(slots=True)
class _Canonical:
    tree: exp.Expression
    aliases: dict[str, str]  # range-variable name -> label from its order of first introduction
    bare_alias_names: set[str]  # unqualified column names that are also range-variable names


def _normalized(statement: exp.Expression, dialect: sqlglot.Dialect) -> exp.Expression:
    """The statement with names compared as the dialect compares them and ``x AS x`` dropped."""
    tree = _normalize_names(statement.copy(), dialect)
    _drop_self_aliases(tree)
    return tree


def _label(kind: str, number: int) -> str:
    # a NUL cannot occur in a real identifier, so a label never meets a table of the same name
    return f"\x00{kind}{number}"


def _canonical(tree: exp.Expression, dialect: sqlglot.Dialect) -> _Canonical | None:
    """A normalized tree with relation names replaced by labels (in place); None when a name
    cannot be placed (a qualifier naming no relation, a schema-qualified column).

    Two namespaces are relabelled apart: CTE names, which FROM items name, and range variables
    (aliases, implicit or not), which column qualifiers name. ``FROM c`` reads CTE c into a range
    variable also called c, and ``FROM d AS e`` is the same thing under other names.
    """
    _add_implicit_aliases(tree)
    cte_references = _cte_references(tree)
    fold = (
        str.lower
        if dialect.normalization_strategy is NormalizationStrategy.CASE_INSENSITIVE
        else str
    )

    ctes: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for node in _dfs(tree):
        if isinstance(node, exp.TableAlias) and isinstance(node.this, exp.Identifier):
            names = ctes if isinstance(node.parent, exp.CTE) else aliases
            kind = "cte" if names is ctes else "alias"
            names.setdefault(node.this.this, _label(kind, len(names) + 1))

    renames: list[tuple[exp.Identifier, dict[str, str]]] = []
    bare: set[str] = set()
    for node in tree.walk():
        if isinstance(node, exp.TableAlias) and isinstance(node.this, exp.Identifier):
            renames.append((node.this, ctes if isinstance(node.parent, exp.CTE) else aliases))
        elif isinstance(node, exp.Table) and id(node) in cte_references:
            renames.append((node.this, ctes))
        elif isinstance(node, exp.Column):
            qualifier = node.args.get("table")
            if isinstance(qualifier, exp.Identifier):
                if node.args.get("db") or node.args.get("catalog"):
                    return None
                renames.append((qualifier, aliases))
            elif isinstance(node.this, exp.Identifier) and fold(node.this.this) in aliases:
                # maybe a whole-row reference to a relation (PostgreSQL): see _equivalent
                bare.add(fold(node.this.this))
    for identifier, names in renames:
        label = names.get(identifier.this)
        if label is None:  # a qualifier or CTE reference no alias introduced: do not guess
            return None
        identifier.set("this", label)
        identifier.set("quoted", False)
    return _Canonical(tree, aliases, bare)


# -- comparison --------------------------------------------------------------------------------


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _args(node: exp.Expression) -> dict[str, object]:
    """Arguments that are set (sqlglot leaves unset ones as None, False or empty)."""
    args = {
        key: value
        for key, value in node.args.items()
        if not (value is None or value is False or (isinstance(value, (list, str)) and not value))
    }
    if isinstance(node, exp.Join):
        kind = str(args.get("kind", "")).upper()
        # JOIN is INNER JOIN, LEFT OUTER JOIN is LEFT JOIN
        if (kind == "INNER" and "side" not in args) or (kind == "OUTER" and "side" in args):
            del args["kind"]
    if isinstance(node, (exp.Anonymous, exp.Var)) and isinstance(args.get("this"), str):
        args["this"] = str(args["this"]).lower()  # function names and keywords ignore case
    return args


def _same_identifier(x: exp.Identifier, y: exp.Identifier) -> bool:
    if x.this != y.this:
        return False
    return x.quoted == y.quoted or x.this.lower() not in _NILADIC


def _same(x: object, y: object) -> bool:
    if isinstance(x, exp.Expression) and isinstance(y, exp.Expression):
        x, y = _unparen(x), _unparen(y)
        if type(x) is not type(y):
            return False
        if isinstance(x, exp.Identifier):
            return _same_identifier(x, y)  # type: ignore[arg-type]
        x_args, y_args = _args(x), _args(y)
        return x_args.keys() == y_args.keys() and all(_same(x_args[k], y_args[k]) for k in x_args)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, exp.Expression) or isinstance(y, exp.Expression):
        return False
    return x == y


def _equivalent(a: _Canonical, b: _Canonical) -> bool:
    # an unqualified name that is also a relation name may be a whole-row reference: it is equal
    # on both sides only if that relation kept its name
    for name in a.bare_alias_names | b.bare_alias_names:
        if a.aliases.get(name) is None or a.aliases.get(name) != b.aliases.get(name):
            return False
    return _same(a.tree, b.tree)


def is_noop(input_sql: str, rewrite_sql: str, dialect: str) -> bool:
    """True when ``rewrite_sql`` is ``input_sql`` up to the differences the module lists.

    Unparseable SQL on either side is never a no-op; an unknown dialect raises ConfigError.
    """
    sqlglot_dialect = _dialect(dialect)
    inputs, rewrites = _parse(input_sql, dialect), _parse(rewrite_sql, dialect)
    if inputs is None or rewrites is None or len(inputs) != len(rewrites):
        return False
    try:
        for original, rewrite in zip(inputs, rewrites, strict=True):
            a = _normalized(original, sqlglot_dialect)
            b = _normalized(rewrite, sqlglot_dialect)
            if _same(a, b):
                continue  # same names throughout: nothing to resolve
            canonical_a = _canonical(a, sqlglot_dialect)
            canonical_b = _canonical(b, sqlglot_dialect)
            if canonical_a is None or canonical_b is None:
                return False
            if not _equivalent(canonical_a, canonical_b):
                return False
    except (SqlglotError, RecursionError):  # scope analysis refused a tree; absurdly deep nesting
        return False
    return True
