"""Generate the demo retail database deterministically.

Every row comes from one ``random.Random(SEED)`` stream consumed in a fixed order, and only
operations whose output does not depend on the interpreter's hash seed or the clock are used, so two
builds with the same SQLite library produce byte-identical files (same sha256). Any change to the
generated content must bump ``GENERATOR_VERSION``: the version names the cache folder, so a stale
file is never reused. The tests record :func:`content_digest` per version and fail until the bump
(and the new digest) is made.
"""

from __future__ import annotations

import hashlib
import sqlite3
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

from polysql.datasets.demo import vocabulary as vocab
from polysql.datasets.demo.schema import TABLE_NAMES, TABLES

GENERATOR_VERSION = 1
SEED = 20240630
DB_ID = "retail"

#: Orders span FIRST_ORDER_DAY .. REFERENCE_DATE. Questions that need "today" use REFERENCE_DATE
#: as a literal, never date('now'), so their answers never change.
FIRST_ORDER_DAY = date(2022, 1, 1)
REFERENCE_DATE = date(2024, 6, 30)

N_CUSTOMERS = 400
N_ORDERS = 1500
ONLINE_STORE_ID = 1

Row = tuple[Any, ...]


def money(cents: int) -> float | int:
    """Money as SQLite stores it in a NUMERIC column: whole amounts as integers, others as floats."""
    return cents // 100 if cents % 100 == 0 else cents / 100


def iso_date(day: date) -> str:
    return day.isoformat()


def iso_datetime(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def ascii_fold(text: str) -> str:
    """'Søren Ångström' -> 'soren angstrom', for generated e-mail addresses."""
    special = {"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "ł": "l", "Ł": "L", "ß": "ss"}
    text = "".join(special.get(ch, ch) for ch in text)
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(ch for ch in decomposed if ch.isascii() and (ch.isalnum() or ch in ".-"))
    return kept.lower()


def random_day(rng: Random, first: date, last: date) -> date:
    return first + timedelta(days=rng.randrange((last - first).days + 1))


@dataclass(slots=True)
class _Employee:
    employee_id: int
    store_id: int
    hired_on: date
    terminated_on: date | None

    def works_on(self, day: date) -> bool:
        return self.hired_on <= day and (self.terminated_on is None or day < self.terminated_on)


@dataclass(slots=True)
class _Product:
    product_id: int
    price_cents: int


@dataclass(frozen=True, slots=True)
class _Line:
    product: _Product
    quantity: int
    discount: int  # percent

    @property
    def cents(self) -> int:
        """Line value after discount, rounded half up to the cent in integer arithmetic."""
        return (self.quantity * self.product.price_cents * (100 - self.discount) + 50) // 100


@dataclass(slots=True)
class _Ledger:
    """The transaction tables, filled order by order."""

    orders: list[Row] = field(default_factory=list)
    items: list[Row] = field(default_factory=list)
    payments: list[Row] = field(default_factory=list)
    shipments: list[Row] = field(default_factory=list)
    returns: list[Row] = field(default_factory=list)

    def pay(self, order_id: int, method: str, cents: int, paid_at: str | None) -> None:
        self.payments.append((len(self.payments) + 1, order_id, method, money(cents), paid_at))


class _Generator:
    """Builds every table's rows; methods must be called in the order of ``rows()``."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = Random(seed)
        self.employees: list[_Employee] = []
        self.products: list[_Product] = []
        self.store_opened: dict[int, date] = {}

    def rows(self) -> dict[str, list[Row]]:
        tables: dict[str, list[Row]] = {}
        tables["StoreRegion"] = [tuple(region) for region in vocab.REGIONS]
        stores = self._stores()
        tables["employees"] = self._employees()
        managers = {e[4]: e[0] for e in tables["employees"] if e[6] == "Store Manager"}
        tables["stores"] = [
            (*store, None if store[0] == ONLINE_STORE_ID else managers[store[0]]) for store in stores
        ]
        tables["categories"] = [tuple(category) for category in vocab.CATEGORIES]
        tables["products"] = self._products()
        tables["customers"] = self._customers()
        tables["promotions"] = [
            (i, code.ljust(10), description, pct, starts, ends, int(online))
            for i, (code, description, pct, starts, ends, online) in enumerate(vocab.PROMOTIONS, 1)
        ]
        ledger = self._orders()
        tables["orders"] = ledger.orders
        tables["order_items"] = ledger.items
        tables["payments"] = ledger.payments
        tables["shipments"] = ledger.shipments
        tables["returns"] = ledger.returns
        return {name: tables[name] for name in TABLE_NAMES}

    # -- master data --------------------------------------------------------------------------
    def _stores(self) -> list[Row]:
        rows = []
        for store_id, (name, city, region, flagship, size) in enumerate(vocab.STORES, 1):
            opened = (date(2019, 3, 1) if store_id == ONLINE_STORE_ID
                      else random_day(self.rng, date(2012, 1, 1), date(2021, 6, 30)))
            self.store_opened[store_id] = opened
            # CHAR(6) semantics, as a fixed-width export would write them: padded with spaces.
            code = f"S{store_id:02d}".ljust(6)
            rows.append((store_id, code, name, city, region, iso_date(opened), int(flagship), size))
        return rows

    def _person(self) -> tuple[str, str]:
        return self.rng.choice(vocab.FIRST_NAMES), self.rng.choice(vocab.LAST_NAMES)

    def _employees(self) -> list[Row]:
        rows: list[Row] = []
        employee_id = 0
        for store_id in range(1, len(vocab.STORES) + 1):
            staff = 3 if store_id == ONLINE_STORE_ID else self.rng.randrange(4, 7)
            manager_id: int | None = None
            for position in range(staff):
                employee_id += 1
                first, last = self._person()
                title = ("Store Manager" if position == 0 and store_id != ONLINE_STORE_ID
                         else "Support Agent" if store_id == ONLINE_STORE_ID else "Sales Associate")
                hired = random_day(self.rng, self.store_opened[store_id], date(2023, 12, 31))
                terminated = None
                if position > 0 and self.rng.random() < 0.18:
                    terminated = random_day(self.rng, hired + timedelta(days=30), REFERENCE_DATE)
                base = 5_200_000 if title == "Store Manager" else 3_100_000
                salary = base + self.rng.randrange(0, 1_800_000)
                if self.rng.random() < 0.5:  # half are round figures, stored by SQLite as integers
                    salary -= salary % 10_000
                email = None if self.rng.random() < 0.1 else (
                    f"{ascii_fold(first)}.{ascii_fold(last)}@polyretail.example".replace(" ", ""))
                rows.append((employee_id, first, last, email, store_id,
                             manager_id if position > 0 else None, title, iso_date(hired),
                             iso_date(terminated) if terminated else None, money(salary),
                             int(terminated is None)))
                self.employees.append(_Employee(employee_id, store_id, hired, terminated))
                if position == 0:
                    manager_id = employee_id
        return rows

    def _products(self) -> list[Row]:
        rows: list[Row] = []
        product_id = 0
        for category_id, catalogue in vocab.PRODUCTS.items():
            for name, list_price in catalogue:
                product_id += 1
                price = list_price * 100 - self.rng.choice((1, 1, 1, 0, 51, 5))
                cost = price * self.rng.randrange(45, 76) // 100
                weight = None if self.rng.random() < 0.12 else round(self.rng.uniform(0.05, 25.0), 3)
                launched = random_day(self.rng, date(2019, 1, 1), date(2024, 3, 1))
                discontinued = int(self.rng.random() < 0.1)
                rows.append((product_id, f"SKU-{product_id:05d}", name, category_id, money(price),
                             money(cost), weight, iso_date(launched), discontinued))
                self.products.append(_Product(product_id, price))
        return rows

    def _customers(self) -> list[Row]:
        rows: list[Row] = []
        city_weights = [5, 2, 3, 3, 5, 3, 3, 4, 2, 3, 1, 2, 2, 2, 2, 1]
        for customer_id in range(1, N_CUSTOMERS + 1):
            first, last = self._person()
            city, country, postal = self.rng.choices(vocab.CITIES, weights=city_weights)[0]
            if self.rng.random() < 0.03:  # hand-typed data: a stray trailing blank
                city += " "
            email = None if self.rng.random() < 0.12 else (
                f"{ascii_fold(first)}.{ascii_fold(last)}{customer_id}@mail.example".replace(" ", ""))
            birth = None if self.rng.random() < 0.15 else random_day(
                self.rng, date(1950, 1, 1), date(2005, 12, 31))
            signup = datetime.combine(random_day(self.rng, date(2020, 1, 1), REFERENCE_DATE),
                                      datetime.min.time()) + timedelta(
                seconds=self.rng.randrange(24 * 3600))
            member = self.rng.random() < 0.6
            tier = self.rng.choice(("Bronze", "Bronze", "Silver", "Gold")) if member else None
            if self.rng.random() < 0.05:
                postal = None
            rows.append((customer_id, first, last, email, city, country, postal,
                         iso_date(birth) if birth else None, iso_datetime(signup), int(member), tier))
        return rows

    # -- transactions -------------------------------------------------------------------------
    def _order_moments(self) -> Iterator[datetime]:
        span = (REFERENCE_DATE - FIRST_ORDER_DAY).days + 1
        moments = []
        for _ in range(N_ORDERS):
            day = FIRST_ORDER_DAY + timedelta(days=self.rng.randrange(span))
            seconds = self.rng.randrange(8 * 3600, 22 * 3600)
            moments.append(datetime.combine(day, datetime.min.time()) + timedelta(seconds=seconds))
        return iter(sorted(moments))

    def _promotion_for(self, day: date, online: bool) -> tuple[int, int] | None:
        for promotion_id, (_, _, pct, starts, ends, online_only) in enumerate(vocab.PROMOTIONS, 1):
            if (date.fromisoformat(starts) <= day <= date.fromisoformat(ends)
                    and (online or not online_only)):
                return (promotion_id, pct) if self.rng.random() < 0.6 else None
        return None

    def _orders(self) -> _Ledger:
        ledger = _Ledger()
        store_ids = list(range(1, len(vocab.STORES) + 1))
        store_weights = [35, 9, 4, 5, 8, 9, 4, 7, 4, 1, 4, 10]
        for order_id, moment in enumerate(self._order_moments(), 1):
            day = moment.date()
            store_id = self.rng.choices(store_ids, weights=store_weights)[0]
            online = store_id == ONLINE_STORE_ID
            customer_id = None if (not online and self.rng.random() < 0.07) else self.rng.randrange(
                1, N_CUSTOMERS + 1)
            staff = [e.employee_id for e in self.employees if e.store_id == store_id and e.works_on(day)]
            employee_id = None if online or not staff else self.rng.choice(staff)
            promotion = self._promotion_for(day, online)
            status = self._status(online, age=(REFERENCE_DATE - day).days)
            ledger.orders.append((order_id, customer_id, store_id, employee_id,
                                  promotion[0] if promotion else None, iso_datetime(moment),
                                  "online" if online else "in-store", status))
            lines = self._lines(ledger, order_id, promotion[1] if promotion else None)
            if status != "cancelled":
                self._pay(ledger, order_id, moment, online, status,
                          total=sum(line.cents for line in lines))
            received_on = day
            if online and status in ("shipped", "delivered", "returned"):
                received_on = self._ship(ledger, order_id, day, delivered=status != "shipped")
            if status == "returned":
                self._return(ledger, order_id, self.rng.choice(lines), received_on)
        return ledger

    def _status(self, online: bool, age: int) -> str:
        roll = self.rng.random()
        if online and age <= 3:
            return "pending"
        if roll < 0.04:
            return "cancelled"
        if roll < 0.09 and age > 20:
            return "returned"
        if online and age <= 10:
            return "shipped"
        return "delivered"

    def _lines(self, ledger: _Ledger, order_id: int, promotion_pct: int | None) -> list[_Line]:
        n_lines = self.rng.choices((1, 2, 3, 4, 5), weights=(40, 30, 15, 10, 5))[0]
        lines = []
        for line_no, product in enumerate(self.rng.sample(self.products, n_lines), 1):
            quantity = self.rng.choices((1, 2, 3, 4, 6), weights=(60, 22, 10, 5, 3))[0]
            discount = (promotion_pct if promotion_pct is not None
                        else self.rng.choice((0,) * 12 + (5, 10)))
            lines.append(_Line(product, quantity, discount))
            ledger.items.append((order_id, line_no, product.product_id, quantity,
                                 money(product.price_cents), discount))
        return lines

    def _pay(self, ledger: _Ledger, order_id: int, moment: datetime, online: bool, status: str,
             total: int) -> None:
        paid_at = None if status == "pending" and online else iso_datetime(
            moment + timedelta(seconds=self.rng.randrange(0, 900)))
        if total > 5000 and self.rng.random() < 0.08:
            voucher = self.rng.choice((1000, 2000, 2500))
            ledger.pay(order_id, "voucher", voucher, paid_at)
            ledger.pay(order_id, "card", total - voucher, paid_at)
            return
        method = "card" if online and self.rng.random() < 0.7 else self.rng.choice(
            vocab.PAYMENT_METHODS)
        ledger.pay(order_id, "PayPal" if online and method == "cash" else method, total, paid_at)

    def _ship(self, ledger: _Ledger, order_id: int, day: date, delivered: bool) -> date:
        """Record the shipment; the day the customer received the goods (order day if not yet)."""
        shipped_on = day + timedelta(days=self.rng.randrange(0, 3))
        delivered_on = shipped_on + timedelta(days=self.rng.randrange(1, 6)) if delivered else None
        carrier = None if self.rng.random() < 0.04 else self.rng.choice(vocab.CARRIERS)
        ledger.shipments.append((len(ledger.shipments) + 1, order_id, carrier, iso_date(shipped_on),
                                 iso_date(delivered_on) if delivered_on else None))
        return delivered_on or day

    def _return(self, ledger: _Ledger, order_id: int, line: _Line, received_on: date) -> None:
        quantity = self.rng.randrange(1, line.quantity + 1)
        returned_on = min(received_on + timedelta(days=self.rng.randrange(2, 21)), REFERENCE_DATE)
        reason = None if self.rng.random() < 0.2 else self.rng.choice(vocab.RETURN_REASONS)
        refund = _Line(line.product, quantity, line.discount).cents
        ledger.returns.append((len(ledger.returns) + 1, order_id, line.product.product_id, quantity,
                               iso_date(returned_on), reason, money(refund)))


def generate_rows(seed: int = SEED) -> dict[str, list[Row]]:
    """Every table's rows, keyed by table name in creation order."""
    return _Generator(seed).rows()


def content_digest(tables: dict[str, list[Row]]) -> str:
    """sha256 over every table's name and rows, independent of the SQLite file format."""
    digest = hashlib.sha256()
    for name, rows in tables.items():
        digest.update(repr((name, rows)).encode("utf-8"))
    return digest.hexdigest()


def write_database(path: Path, seed: int = SEED) -> None:
    """Create the demo database at ``path`` (which must not exist yet).

    Page size, encoding and journal mode are set explicitly and the file is vacuumed at the end, so
    its bytes depend only on the rows and the SQLite library version (which SQLite records in the
    header), not on defaults or the order pages happened to be allocated in.
    """
    if path.exists():
        raise FileExistsError(path)
    tables = generate_rows(seed)
    con = sqlite3.connect(path, isolation_level=None)
    try:
        con.execute("PRAGMA page_size = 4096")
        con.execute("PRAGMA encoding = 'UTF-8'")
        con.execute("PRAGMA auto_vacuum = NONE")
        con.execute("PRAGMA journal_mode = DELETE")
        con.execute(f"PRAGMA user_version = {GENERATOR_VERSION}")
        con.execute("BEGIN")
        for name, ddl in TABLES:
            con.execute(ddl)
            rows = tables[name]
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                con.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)
        con.execute("COMMIT")
        con.execute("VACUUM")
    finally:
        con.close()
