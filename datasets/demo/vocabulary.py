"""Hand-written word lists the demo generator draws from.

The lists deliberately contain accented letters, a name spelled in capitals, surnames that start
with a lower-case particle ("de", "van") next to capitalised ones, and an apostrophe, because
those are the values on which engines disagree (``upper``/``lower`` beyond ASCII, case-sensitive
``LIKE``, byte vs character ``length``, collation order). Order matters: the generator indexes
into these tuples, so editing them changes the database (bump ``GENERATOR_VERSION``).
"""

from __future__ import annotations

FIRST_NAMES: tuple[str, ...] = (
    "James", "Mary", "Anna", "Peter", "Laura", "Michael", "Sarah", "David", "Emma", "Liam",
    "Olivia", "Noah", "Mia", "Lucas", "Sofia", "Ethan", "Hannah", "Jonas", "Lea", "Elena",
    "Marco", "Giulia", "Ana", "Pablo", "Ingrid", "Tom", "Nina", "Oscar", "Ruth", "Victor",
    "José", "Zoë", "Chloé", "Björn", "Søren", "Renée", "François", "Noël", "Łukasz", "Íñigo",
    "Maëlle", "Jürgen", "Åsa", "Ólafur", "Agnès", "Dóra", "ANNA", "zoe",
)

LAST_NAMES: tuple[str, ...] = (
    "Smith", "Johnson", "Brown", "Taylor", "Wilson", "Martin", "Clark", "Lewis", "Walker", "Hall",
    "Young", "King", "Wright", "Green", "Baker", "Adams", "Nelson", "Carter", "Mitchell", "Roberts",
    "Müller", "Schröder", "Ångström", "Núñez", "García", "Sørensen", "Dvořák", "Łęcki", "Öztürk",
    "Ó Briain", "O'Brien", "McDonald", "de Vries", "De Vries", "van Dijk", "Van Dyke", "de la Cruz",
    "Delgado", "Dempsey", "Vanek",
)

# (city, country, postal code as text — leading zeros are meaningful)
CITIES: tuple[tuple[str, str, str], ...] = (
    ("Berlin", "Germany", "10115"),
    ("Dresden", "Germany", "01067"),
    ("Köln", "Germany", "50667"),
    ("München", "Germany", "80331"),
    ("Paris", "France", "75001"),
    ("Montréal", "Canada", "H2X 1Y4"),
    ("Toronto", "Canada", "M5H 2N2"),
    ("Madrid", "Spain", "28013"),
    ("Málaga", "Spain", "29015"),
    ("København", "Denmark", "1050"),
    ("Ærøskøbing", "Denmark", "5970"),
    ("Odense", "Denmark", "5000"),
    ("Zürich", "Switzerland", "8001"),
    ("Göteborg", "Sweden", "41103"),
    ("Kraków", "Poland", "31-001"),
    ("Reykjavík", "Iceland", "101"),
)

# (RegionID, RegionName, Country)
REGIONS: tuple[tuple[int, str, str], ...] = (
    (1, "Nord", "Germany"),
    (2, "Süd", "Germany"),
    (3, "Île-de-France", "France"),
    (4, "Andalucía", "Spain"),
    (5, "Syddanmark", "Denmark"),
    (6, "Ontario", "Canada"),
    (7, "Online", None),
)

# (store name, city, RegionID, is_flagship, square metres or None for the web shop)
STORES: tuple[tuple[str, str | None, int, bool, int | None], ...] = (
    ("Web Shop", None, 7, False, None),
    ("Berlin Mitte", "Berlin", 1, True, 2400),
    ("Dresden Altmarkt", "Dresden", 1, False, 900),
    ("Köln Dom", "Köln", 2, False, 1100),
    ("München Marienplatz", "München", 2, True, 2100),
    ("Paris Rivoli", "Paris", 3, True, 1800),
    ("Paris Bercy", "Paris", 3, False, 750),
    ("Madrid Sol", "Madrid", 4, False, 1300),
    ("Málaga Centro", "Málaga", 4, False, 650),
    ("Ærøskøbing Havn", "Ærøskøbing", 5, False, 180),
    ("Odense Banegård", "Odense", 5, False, 820),
    ("Toronto Queen St", "Toronto", 6, True, 1600),
)

# (category_id, name, parent_id)
CATEGORIES: tuple[tuple[int, str, int | None], ...] = (
    (1, "Electronics", None),
    (2, "Home & Kitchen", None),
    (3, "Clothing", None),
    (4, "Sports", None),
    (5, "Books", None),
    (6, "Toys", None),
    (7, "Phones", 1),
    (8, "Laptops", 1),
    (9, "Audio", 1),
    (10, "Cookware", 2),
    (11, "Furniture", 2),
    (12, "Men", 3),
    (13, "Women", 3),
    (14, "Outdoor", 4),
    (15, "Fitness", 4),
)

# category_id -> (product name, list price in whole currency units); the generator shaves a few
# cents off most prices (19.99, 19.95) and keeps some round (20), which SQLite stores as integers.
PRODUCTS: dict[int, tuple[tuple[str, int], ...]] = {
    7: (("Nova Phone 5", 699), ("Nova Phone 5 Pro", 999), ("Pixelon S", 549), ("ePhone mini", 429),
        ("Phone case", 25), ("USB-C cable", 12), ("Wireless charger", 39), ("Screen protector", 15)),
    8: (("AirBook 13", 1299), ("AirBook 15", 1699), ("WorkStation X1", 1899), ("eBook reader", 139),
        ("Laptop sleeve", 35), ("Docking station", 189)),
    9: (("Over-ear headphones", 249), ("In-ear buds", 129), ("Bluetooth speaker", 89),
        ("Soundbar 300", 399), ("Vinyl player", 299), ("DAC café edition", 179)),
    10: (("Crème brûlée torch", 29), ("Cast iron pan", 59), ("Non-stick pan 28cm", 45),
         ("Chef's knife", 79), ("Espresso maker", 249), ("Stock pot 8L", 65), ("Wok", 49),
         ("Cutting board", 25)),
    11: (("Oak desk", 649), ("Bookshelf", 229), ("Office chair", 349), ("Sofa Ærø", 1299),
         ("Side table", 119), ("Bar stool", 89)),
    12: (("Oxford shirt", 59), ("Chino trousers", 69), ("Wool sweater", 99), ("Rain jacket", 149),
         ("T-shirt basic", 15), ("Leather belt", 45)),
    13: (("Linen dress", 119), ("Denim jacket", 99), ("Silk scarf", 69), ("Ankle boots", 159),
         ("Cardigan", 79), ("Pleated skirt", 65)),
    14: (("Trekking poles", 79), ("Tent 2P", 299), ("Sleeping bag", 189), ("Headlamp", 35),
         ("Water bottle", 19), ("Backpack 40L", 129)),
    15: (("Yoga mat", 35), ("Dumbbell set", 149), ("Kettlebell 12kg", 55), ("Jump rope", 12),
         ("Foam roller", 29), ("Rowing machine", 899)),
    5: (("The Quiet Harbour", 18), ("Data & Dialects", 45), ("Cooking for Two", 25),
        ("Nordic Tales", 15), ("Piñata Nights", 12), ("SQL in Practice", 39),
        ("the lowercase novel", 14)),
    6: (("Building blocks 500", 49), ("Puzzle 1000", 19), ("Toy train", 89), ("Plush bear", 25),
        ("Piñata kit", 22), ("Kite", 29)),
}

PAYMENT_METHODS: tuple[str, ...] = ("card", "card", "card", "cash", "PayPal", "voucher")

CARRIERS: tuple[str, ...] = ("DHL", "UPS", "PostNord", "La Poste", "Canada Post")

RETURN_REASONS: tuple[str, ...] = ("damaged", "wrong size", "not as described", "changed mind",
                                   "Damaged", "late delivery")

# (code, description, discount %, starts, ends, online only)
PROMOTIONS: tuple[tuple[str, str, int, str, str, bool], ...] = (
    ("WINTER22", "Winter sale 2022", 10, "2022-01-03", "2022-01-31", False),
    ("SPRING", "Spring clean-up", 15, "2022-04-01", "2022-04-30", True),
    ("SUMMER22", "Summer sale 2022", 20, "2022-07-01", "2022-07-31", False),
    ("BLACKFRI", "Black Friday 2022", 25, "2022-11-25", "2022-11-28", False),
    ("WINTER23", "Winter sale 2023", 10, "2023-01-02", "2023-01-31", False),
    ("APP5", "App launch", 5, "2023-03-01", "2023-05-31", True),
    ("SUMMER23", "Summer sale 2023", 20, "2023-07-01", "2023-07-31", False),
    ("BLACKFRI23", "Black Friday 2023", 30, "2023-11-24", "2023-11-27", False),
    ("NEWYEAR24", "New year 2024", 15, "2024-01-01", "2024-01-14", True),
)
