"""The lowest layer: data model, errors and helpers every other part may use (and nothing else).

Modules move here from the top of ``polysql/`` as the package is reorganised; new core modules
are written here from the start.
"""
