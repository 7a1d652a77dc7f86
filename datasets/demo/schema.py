"""DDL of the demo retail database, in creation order.

Declared types are chosen to exercise type mapping: ``DATE``/``DATETIME`` hold ISO text,
``NUMERIC(10,2)`` holds money (SQLite stores 20.00 as the integer 20 and 19.99 as a float),
``BOOLEAN`` holds 0/1, ``CHAR(n)`` codes are stored padded with trailing spaces. ``StoreRegion``
and the ``FirstName``/``LastName``/``RegionID`` columns are mixed-case on purpose: engines that fold
unquoted identifiers (PostgreSQL) only find them when quoted.
"""

from __future__ import annotations

TABLES: tuple[tuple[str, str], ...] = (
    ("StoreRegion", """
CREATE TABLE "StoreRegion" (
    "RegionID" INTEGER PRIMARY KEY,
    "RegionName" TEXT NOT NULL,
    "Country" TEXT
)"""),
    ("stores", """
CREATE TABLE stores (
    store_id INTEGER PRIMARY KEY,
    store_code CHAR(6) NOT NULL UNIQUE,
    name TEXT NOT NULL,
    city TEXT,
    region_id INTEGER NOT NULL REFERENCES "StoreRegion" ("RegionID"),
    opened_on DATE NOT NULL,
    is_flagship BOOLEAN NOT NULL,
    square_meters INTEGER,
    manager_id INTEGER REFERENCES employees (employee_id)
)"""),
    ("employees", """
CREATE TABLE employees (
    employee_id INTEGER PRIMARY KEY,
    "FirstName" TEXT NOT NULL,
    "LastName" TEXT NOT NULL,
    email TEXT,
    store_id INTEGER NOT NULL REFERENCES stores (store_id),
    manager_id INTEGER REFERENCES employees (employee_id),
    job_title TEXT NOT NULL,
    hired_on DATE NOT NULL,
    terminated_on DATE,
    salary NUMERIC(10,2) NOT NULL,
    is_active BOOLEAN NOT NULL
)"""),
    ("categories", """
CREATE TABLE categories (
    category_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    parent_id INTEGER REFERENCES categories (category_id)
)"""),
    ("products", """
CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    sku TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories (category_id),
    unit_price NUMERIC(10,2) NOT NULL,
    unit_cost NUMERIC(10,2) NOT NULL,
    weight_kg REAL,
    launched_on DATE NOT NULL,
    discontinued BOOLEAN NOT NULL
)"""),
    ("customers", """
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    "FirstName" TEXT NOT NULL,
    "LastName" TEXT NOT NULL,
    email TEXT,
    city TEXT NOT NULL,
    country TEXT NOT NULL,
    postal_code TEXT,
    birth_date DATE,
    signup_at DATETIME NOT NULL,
    is_member BOOLEAN NOT NULL,
    loyalty_tier TEXT
)"""),
    ("promotions", """
CREATE TABLE promotions (
    promotion_id INTEGER PRIMARY KEY,
    code CHAR(10) NOT NULL UNIQUE,
    description TEXT NOT NULL,
    discount_pct INTEGER NOT NULL,
    starts_on DATE NOT NULL,
    ends_on DATE NOT NULL,
    online_only BOOLEAN NOT NULL
)"""),
    ("orders", """
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER REFERENCES customers (customer_id),
    store_id INTEGER NOT NULL REFERENCES stores (store_id),
    employee_id INTEGER REFERENCES employees (employee_id),
    promotion_id INTEGER REFERENCES promotions (promotion_id),
    ordered_at DATETIME NOT NULL,
    channel TEXT NOT NULL,
    status TEXT NOT NULL
)"""),
    ("order_items", """
CREATE TABLE order_items (
    order_id INTEGER NOT NULL REFERENCES orders (order_id),
    line_no INTEGER NOT NULL,
    product_id INTEGER NOT NULL REFERENCES products (product_id),
    quantity INTEGER NOT NULL,
    unit_price NUMERIC(10,2) NOT NULL,
    discount_pct INTEGER NOT NULL,
    PRIMARY KEY (order_id, line_no)
)"""),
    ("payments", """
CREATE TABLE payments (
    payment_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders (order_id),
    method TEXT NOT NULL,
    amount NUMERIC(10,2) NOT NULL,
    paid_at DATETIME
)"""),
    ("shipments", """
CREATE TABLE shipments (
    shipment_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL UNIQUE REFERENCES orders (order_id),
    carrier TEXT,
    shipped_on DATE NOT NULL,
    delivered_on DATE
)"""),
    ("returns", """
CREATE TABLE returns (
    return_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders (order_id),
    product_id INTEGER NOT NULL REFERENCES products (product_id),
    quantity INTEGER NOT NULL,
    returned_on DATE NOT NULL,
    reason TEXT,
    refund_amount NUMERIC(10,2) NOT NULL
)"""),
)

TABLE_NAMES: tuple[str, ...] = tuple(name for name, _ in TABLES)
