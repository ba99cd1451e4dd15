"""Generated forms and registers: records of people written the common ways forms
reach a document system, with the questions a user asks of them and their answers.

Each record (a customer, a phone number, a policy number, a vehicle's VIN, a total,
and fields nobody asks about) is written in one of :data:`LAYOUTS`, in PDF, DOCX,
HTML or Markdown. The layouts, labels, field order, fonts and questions vary with a
seed, so a scorer trained on some seeds is tested on forms it never saw. Values are
unique across the records of a document: a quote holding the asked value is from the
right record.
"""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from dataclasses import dataclass

FIRST = (
    "Dmitri",
    "Ana",
    "Wei",
    "Sara",
    "Gabriel",
    "Fatima",
    "Olu",
    "Ingrid",
    "Kenji",
    "Priya",
    "Lucas",
    "Maria",
    "Tomasz",
    "Aisha",
    "Noah",
    "Elena",
    "Jonas",
    "Mei",
    "Omar",
    "Chloe",
    "Ravi",
    "Hana",
    "Pablo",
    "Zoe",
    "Ivan",
    "Leila",
    "Marco",
    "Yuki",
    "Samuel",
    "Nora",
)
LAST = (
    "Silva",
    "Lopez",
    "Chen",
    "Kim",
    "Diaz",
    "Haddad",
    "Adeyemi",
    "Berg",
    "Tanaka",
    "Sharma",
    "Moreau",
    "Rossi",
    "Nowak",
    "Khan",
    "Walker",
    "Petrova",
    "Becker",
    "Wong",
    "Farouk",
    "Martin",
    "Gupta",
    "Sato",
    "Ortega",
    "Novak",
    "Ivanova",
    "Brandt",
    "Costa",
    "Okafor",
    "Lindqvist",
    "Keller",
)

# label wordings per field: forms say the same thing in different words
LABELS = {
    "customer": ("Customer name", "Customer", "Name", "Policyholder", "Insured"),
    "phone": ("Phone", "Phone number", "Telephone", "Tel.", "Mobile phone"),
    "policy": ("Policy number", "Policy no.", "Policy", "Policy ID", "Policy #"),
    "vin": ("VIN", "Vehicle identification number", "VIN number", "Vehicle VIN", "Chassis VIN"),
    "total": ("Total", "Total due", "Amount due", "Grand total", "Total amount"),
    "email": ("Email", "E-mail", "Email address", "Contact email", "Mail"),
    "city": ("City", "Town", "City of residence", "Home city", "Location"),
    "date": ("Date", "Issue date", "Date issued", "Start date", "Effective date"),
    "make": ("Make", "Vehicle make", "Manufacturer", "Brand"),
    "model": ("Model", "Vehicle model", "Model name"),
    "color": ("Color", "Colour", "Paint colour", "Exterior color"),
    "year": ("Year", "Model year", "Year of manufacture"),
}
COLORS = ("White", "Black", "Silver", "Dark blue", "Red", "Grey", "Green", "Beige")
# unique in a document: the make and model together name a record, as a person does
VEHICLES = [
    (make, model)
    for make, models in (
        ("Ford", ("Focus", "Fiesta", "Ranger", "Mustang")),
        ("Toyota", ("Corolla", "Camry", "Yaris", "Hilux")),
        ("Honda", ("Civic", "Accord", "Jazz")),
        ("Jeep", ("Wrangler", "Cherokee", "Renegade")),
        ("Volvo", ("V60", "XC40", "S90")),
        ("Skoda", ("Octavia", "Fabia", "Superb")),
        ("Kia", ("Ceed", "Sportage", "Picanto")),
        ("Renault", ("Clio", "Megane", "Kangoo")),
    )
    for model in models
]
COMPANIES = (
    "ZENITH MOTOR INSURANCE",
    "NORTHGATE AUTO REPAIR",
    "Harbour Mutual Ltd",
    "Blue Ridge Claims Office",
    "ACME COLLISION CENTRE",
)
# asked of a record named by its vehicle
VEHICLE_QUESTIONS = {
    "vin": ("What is the VIN of the {vehicle}?", "Which VIN does the {vehicle} have?"),
    "total": ("What is the grand total of the {vehicle}?", "How much is due for the {vehicle}?"),
    "phone": ("What is the phone number of the {vehicle}'s owner?",),
    "policy": ("Which policy number covers the {vehicle}?",),
    "customer": ("Who owns the {vehicle}?", "Who is the customer for the {vehicle}?"),
    "color": ("What color is the {vehicle}?", "What is the colour of the {vehicle}?"),
    "year": ("What year is the {vehicle} from?", "What is the model year of the {vehicle}?"),
}
VEHICLE_UNANSWERABLE = (
    "What is the odometer reading of the {vehicle}?",
    "What is the tire pressure of the {vehicle}?",
    "When was the {vehicle} last serviced?",
    "What engine does the {vehicle} have?",
)
ASKED = ("phone", "policy", "vin")
# besides those, each record is asked one of these, when its form has the field
ASKED_ALSO = ("total", "email", "date", "city")
QUESTIONS = {
    "total": (
        "What is the total of {name}?",
        "How much does {name} owe?",
        "What is the amount due for {name}?",
        "What is the grand total for {name}?",
    ),
    "email": (
        "What is the email address of {name}?",
        "What is {name}'s e-mail?",
        "How can {name} be reached by email?",
    ),
    "date": (
        "What is the date on {name}'s record?",
        "When was {name}'s policy issued?",
        "What date is given for {name}?",
    ),
    "city": (
        "In which city does {name} live?",
        "What city is {name} from?",
        "Where does {name} live?",
    ),
    "phone": (
        "What is the phone number of {name}?",
        "What is {name}'s phone number?",
        "Which phone number does {name} have?",
        "How can {name} be reached by phone?",
    ),
    "policy": (
        "What is the policy number of {name}?",
        "What is {name}'s policy number?",
        "Which policy number belongs to {name}?",
        "What policy does {name} hold?",
    ),
    "vin": (
        "What is the VIN of {name}'s vehicle?",
        "What is the vehicle identification number of {name}'s car?",
        "Which VIN is on {name}'s vehicle?",
        "What is the VIN for {name}?",
    ),
}
# a field no record has: the documents cannot answer it
UNANSWERABLE = (
    "What is the blood type of {name}?",
    "What is the passport number of {name}?",
    "Which dentist does {name} visit?",
    "What is the tire pressure of {name}'s car?",
    "What is the shoe size of {name}?",
    "Who is the employer of {name}?",
    "What is the date of birth of {name}?",
    "What is the licence plate of {name}'s vehicle?",
    "What is {name}'s account balance?",
    "How many children does {name} have?",
)
# a form of one record (an estimate, an invoice) is asked without naming it
UNNAMED = {
    "phone": ("What is the phone number?", "What is the customer's phone number?"),
    "policy": ("What is the policy number?", "Which policy is this?"),
    "vin": ("What is the VIN of the vehicle?", "What is the vehicle identification number?"),
    "total": ("What is the total?", "How much is due?", "What is the grand total?"),
    "customer": ("Who is the customer?", "What is the name of the policyholder?"),
}
# asked unnamed of a form that names a vehicle
UNNAMED_VEHICLE = {
    "color": ("What color is the vehicle?", "What is the colour of the car?", "Which color is it?"),
    "year": ("What year is the vehicle?", "What is the model year of the car?"),
    "make": ("Which make is the car?", "Who made the vehicle?"),
    "model": ("What model is the vehicle?", "Which model is the car?"),
}
UNNAMED_UNANSWERABLE = (
    "What is the tire pressure of the vehicle?",
    "What is the customer's blood type?",
    "Which dentist does the customer visit?",
    "What is the mileage of the car?",
)
NOTE = (
    "This is a preliminary estimate for the visible damage of the vehicle. Additional damage, "
    "repairs or parts may be found after the vehicle has been disassembled. Parts prices may "
    "vary due to models and maker price updates. Please be advised that if the owner elects "
    "to have the vehicle sent to service for any mechanical concerns, all service departments "
    "charge a diagnostic fee. If the mechanical concern is deemed not related to an insurance "
    "claim, the owner will be responsible for the charges. Payment is due on delivery of the "
    "vehicle unless agreed otherwise in writing with the office. Storage fees apply to vehicles "
    "left more than five days after the repair is complete."
)
_VIN_CHARS = "ABCDEFGHJKLMNPRSTUVWXYZ0123456789"
CITIES = (
    "Lisbon",
    "Porto",
    "Denver",
    "Austin",
    "Leeds",
    "Malmo",
    "Osaka",
    "Lyon",
    "Turin",
    "Gdansk",
    "Accra",
    "Perth",
)


@dataclass(frozen=True)
class Record:
    customer: str
    phone: str
    policy: str
    vin: str
    total: str
    email: str
    city: str
    date: str
    make: str = ""
    model: str = ""
    color: str = ""
    year: str = ""

    @property
    def vehicle(self) -> str:
        return f"{self.make} {self.model}"

    def value(self, field: str) -> str:
        return str(getattr(self, field))


@dataclass(frozen=True)
class FormQuestion:
    question: str
    answer: str | None  # None: nothing in the documents answers it
    record: int
    page: int | None  # the PDF page the answer is on
    names: str = ""  # how it names its record (a person, a vehicle); "" when it does not
    also: tuple[str, ...] = ()  # other records' values that answer it as well (unnamed)


@dataclass(frozen=True)
class FormDocument:
    name: str
    data: bytes
    layout: str
    questions: tuple[FormQuestion, ...]
    names: frozenset[str] = frozenset()  # every person and vehicle its records name


def records(rng: random.Random, names: list[str]) -> list[Record]:
    """A record per name, every value differing from every other record's."""
    made = []
    vehicles = rng.sample(VEHICLES, len(names))
    for n, name in enumerate(names):
        area = rng.randint(201, 989)
        made.append(
            Record(
                customer=name,
                phone=rng.choice(
                    (
                        f"({area}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                        f"+1 {area} {rng.randint(200, 999)} {rng.randint(1000, 9999)}",
                        f"{area}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}",
                    )
                ),
                policy=rng.choice(("POL", "PL", "AUT", "INS"))
                + f"-{rng.randint(100000, 999999)}-{n}",
                vin="".join(rng.choice(_VIN_CHARS) for _ in range(16)) + str(n % 10),
                total=f"{rng.randint(100, 9999):,}.{rng.randint(0, 99):02d}",
                email=name.lower().replace(" ", ".") + f"{n}@example.com",
                city=rng.choice(CITIES),
                date=f"20{rng.randint(10, 25)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
                make=vehicles[n][0],
                model=vehicles[n][1],
                color=rng.choice(COLORS),
                year=str(rng.randint(1998, 2025)),
            )
        )
    return made


class _Style:
    """One document's wording: a label per field, the field order, the questions."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.labels = {f: rng.choice(options) for f, options in LABELS.items()}
        extra = rng.sample(["email", "city", "date"], rng.randint(1, 3))
        # an estimate's or a policy's form also names the vehicle (its make and model)
        self.vehicle = rng.random() < 0.5
        extra += ["make", "model", "color", "year"] if self.vehicle else []
        fields = ["customer", "phone", "policy", "vin", "total", *extra]
        rest = fields[1:]
        rng.shuffle(rest)
        self.fields = (
            ["customer", *rest] if rng.random() < 0.7 else rest[:2] + ["customer"] + rest[2:]
        )

    def rows(self, record: Record) -> list[tuple[str, str]]:
        return [(self.labels[f], record.value(f)) for f in self.fields]

    def questions(self, people: list[Record], pages: list[int | None]) -> list[FormQuestion]:
        if len(people) <= 2:  # an estimate or two: asked without naming the record
            return self._unnamed(people, pages[0])
        asked = []
        for n, (person, page) in enumerate(zip(people, pages, strict=True)):
            if self.vehicle and self.rng.random() < 0.4:
                for field in self.rng.sample(list(VEHICLE_QUESTIONS), 3):
                    wording = self.rng.choice(VEHICLE_QUESTIONS[field])
                    asked.append(
                        FormQuestion(
                            wording.format(vehicle=person.vehicle),
                            person.value(field),
                            n,
                            page,
                            person.vehicle,
                        )
                    )
                continue
            extra = [f for f in ASKED_ALSO if f in self.fields]
            for field in (*ASKED, self.rng.choice(extra)):
                wording = self.rng.choice(QUESTIONS[field])
                asked.append(
                    FormQuestion(
                        wording.format(name=person.customer),
                        person.value(field),
                        n,
                        page,
                        person.customer,
                    )
                )
        for wording in self.rng.sample(UNANSWERABLE, 3):
            person = self.rng.choice(people)
            asked.append(
                FormQuestion(
                    wording.format(name=person.customer),
                    None,
                    people.index(person),
                    None,
                    person.customer,
                )
            )
        if self.vehicle:
            for wording in self.rng.sample(VEHICLE_UNANSWERABLE, 2):
                person = self.rng.choice(people)
                question = wording.format(vehicle=person.vehicle)
                asked.append(
                    FormQuestion(question, None, people.index(person), None, person.vehicle)
                )
        return asked

    def _unnamed(self, people: list[Record], page: int | None) -> list[FormQuestion]:
        """Each record's value answers (of two, "What color is the vehicle?" is either's)."""
        person, others = people[0], people[1:]
        asked = [
            FormQuestion(
                self.rng.choice(wordings),
                person.value(field),
                0,
                page if not others else None,
                also=tuple(o.value(field) for o in others),
            )
            for field, wordings in [
                *UNNAMED.items(),
                *(UNNAMED_VEHICLE.items() if self.vehicle else ()),
            ]
        ]
        return asked + [
            FormQuestion(wording, None, 0, None)
            for wording in self.rng.sample(UNNAMED_UNANSWERABLE, 2)
        ]


def _heading(rng: random.Random, n: int, person: Record) -> str:
    return rng.choice(
        (f"Record {n + 1}", f"Customer {n + 1}", f"Policy record {n + 1}", person.customer)
    )


def _pdf(
    draw: Callable[[object, random.Random], list[int]], rng: random.Random
) -> tuple[bytes, list[int]]:
    import pymupdf

    document = pymupdf.open()
    pages = draw(document, rng)
    if rng.random() < 0.5:  # the issuer's letterhead, with a phone number of its own
        company = rng.choice(COMPANIES)
        phone = f"({rng.randint(201, 989)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}"
        street = f"{rng.randint(1, 999)} {rng.choice(('Main', 'High', 'Mill'))} Street"
        for page in document.pages():
            page.insert_text((72, 40), f"{company} {street} Phone: {phone}", fontsize=8)
    data = document.tobytes()
    document.close()
    return data, pages


def pdf_label_lines(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """One record a page as "Label: value" lines."""

    def draw(document, rng):  # type: ignore[no-untyped-def]
        import pymupdf

        pages = []
        size = rng.choice((10, 11, 12))
        # an estimate's long note between its fields and its total puts the total in
        # another chunk than the lines that name the record
        noted = rng.random() < 0.5
        for n, person in enumerate(people):
            page = document.new_page()
            y = 72.0
            page.insert_text((72, y), _heading(rng, n, person), fontsize=size + 4)
            y += 2.2 * size
            rows = style.rows(person)
            total = next(row for row in rows if row[0] == style.labels["total"])
            for label, value in [r for r in rows if r != total] if noted else rows:
                page.insert_text((72, y), f"{label}: {value}", fontsize=size)
                y += 1.6 * size
            if noted:
                box = pymupdf.Rect(72, y, 520, y + 260)
                page.insert_textbox(box, NOTE, fontsize=size - 1)
                y += 270
                page.insert_text((72, y), f"{total[0]}: {total[1]}", fontsize=size)
            pages.append(n + 1)
        return pages

    data, pages = _pdf(draw, style.rng)
    return data, list(pages)


def pdf_register(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """A ruled register: a header row, one record a row, several pages."""

    def draw(document, rng):  # type: ignore[no-untyped-def]
        import pymupdf

        fields = style.fields
        per_page = rng.choice((3, 4, 5))
        widths = {"customer": 110, "phone": 95, "policy": 95, "vin": 125, "email": 150}
        pages = []
        size = 7
        # every field a column, the page as wide as the register needs
        columns = list(fields)
        width = max(842, 72 + sum(widths.get(f, 62) for f in columns))
        for start in range(0, len(people), per_page):
            page = document.new_page(width=width, height=595)
            page.insert_text((36, 50), "Customer register", fontsize=14)
            x_edges = [36.0]
            for f in columns:
                x_edges.append(x_edges[-1] + widths.get(f, 62))
            rows = [[style.labels[f] for f in columns]] + [
                [p.value(f) for f in columns] for p in people[start : start + per_page]
            ]
            y = 70.0
            for row in rows:
                for x0, x1, text in zip(x_edges, x_edges[1:], row, strict=False):
                    page.draw_rect(pymupdf.Rect(x0, y, x1, y + 18), width=0.6)
                    page.insert_text((x0 + 3, y + 12), text, fontsize=size)
                y += 18
            pages += [document.page_count] * len(rows[1:])
        return pages

    data, pages = _pdf(draw, style.rng)
    return data, list(pages)


def pdf_borderless(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """A borderless two-column label/value table under a heading, one or two a page."""

    def draw(document, rng):  # type: ignore[no-untyped-def]
        import pymupdf

        per_page = rng.choice((1, 2))
        size = rng.choice((10, 11))
        # the value column starts past the longest label, by a gap a designer would pick
        widest = max(
            pymupdf.get_text_length(label, fontsize=size) for label, _ in style.rows(people[0])
        )
        value_x = 72 + widest + rng.choice((12, 24, 48))
        noted = per_page == 1 and rng.random() < 0.5  # a note under each record
        pages = []
        page = None
        y = 0.0
        for n, person in enumerate(people):
            if n % per_page == 0:
                page = document.new_page()
                y = 72.0
            assert page is not None
            page.insert_text((72, y), _heading(rng, n, person), fontsize=size + 3)
            y += 2.2 * size
            for label, value in style.rows(person):
                page.insert_text((72, y), label, fontsize=size)
                page.insert_text((value_x, y), value, fontsize=size)
                y += 1.7 * size
            if noted:
                page.insert_textbox(
                    pymupdf.Rect(72, y + size, 520, y + 300), NOTE, fontsize=size - 1
                )
            y += 3 * size
            pages.append(document.page_count)
        return pages

    data, pages = _pdf(draw, style.rng)
    return data, list(pages)


def docx_tables(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """A heading and a two-column table per record."""
    import docx

    document = docx.Document()
    document.add_heading("Customer records", level=1)
    for n, person in enumerate(people):
        document.add_heading(_heading(style.rng, n, person), level=2)
        rows = style.rows(person)
        table = document.add_table(rows=len(rows), cols=2)
        table.style = style.rng.choice(("Table Grid", "Light List", "Normal Table"))
        for row, (label, value) in zip(table.rows, rows, strict=True):
            row.cells[0].text = label
            row.cells[1].text = value
        if style.rng.random() < 0.5:
            document.add_paragraph("Reviewed by the claims office.")
        elif style.rng.random() < 0.4:
            document.add_paragraph(NOTE)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue(), [None] * len(people)


def html_table(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """One table with a header row, a record a row."""
    from html import escape

    head = "".join(f"<th>{escape(style.labels[f])}</th>" for f in style.fields)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(p.value(f))}</td>" for f in style.fields) + "</tr>"
        for p in people
    )
    html = (
        "<html><head><title>Customer register</title></head><body>"
        f"<h1>Customer register</h1><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></body></html>"
    )
    return html.encode(), [None] * len(people)


def markdown_lists(people: list[Record], style: _Style) -> tuple[bytes, list[int | None]]:
    """A section per record with ``- **Label:** value`` list items."""
    bullet = style.rng.choice(
        ("- **{label}:** {value}", "* **{label}**: {value}", "- {label}: {value}")
    )
    parts = ["# Customer records\n"]
    for n, person in enumerate(people):
        parts.append(f"## {_heading(style.rng, n, person)}\n")
        parts += [bullet.format(label=label, value=value) for label, value in style.rows(person)]
        parts.append("")
        if style.rng.random() < 0.3:
            parts += [NOTE, ""]
    return "\n".join(parts).encode(), [None] * len(people)


LAYOUTS: dict[str, tuple[str, Callable[[list[Record], _Style], tuple[bytes, list[int | None]]]]] = {
    "pdf_label_lines": ("pdf", pdf_label_lines),
    "pdf_register": ("pdf", pdf_register),
    "pdf_borderless": ("pdf", pdf_borderless),
    "docx_tables": ("docx", docx_tables),
    "html_table": ("html", html_table),
    "markdown_lists": ("md", markdown_lists),
}


def form_document(layout: str, seed: int, *, count: int = 9) -> FormDocument:
    """``count`` records in ``layout``, worded by ``seed``, with their questions."""
    rng = random.Random(f"{layout}:{seed}")
    # the layouts of one seed share no name: a library of them names each person once
    pool = random.Random(f"names:{seed}:{count}").sample(
        [f"{f} {last}" for f in FIRST for last in LAST], count * len(LAYOUTS)
    )
    slot = list(LAYOUTS).index(layout)
    people = records(rng, pool[slot * count : (slot + 1) * count])
    style = _Style(rng)
    extension, write = LAYOUTS[layout]
    data, pages = write(people, style)
    if extension != "pdf":
        pages = [None] * len(people)
    name = f"{layout}-{seed}" if count > 2 else f"{layout}-{seed}-of-{count}"
    names = frozenset(p.customer for p in people) | frozenset(
        p.vehicle for p in people if style.vehicle
    )
    return FormDocument(
        f"{name}.{extension}", data, layout, tuple(style.questions(people, pages)), names
    )


# --- tables of measurements and nested key/value files: other kinds of records ---

ENTITIES = {
    "Substance": [
        "Ethanol",
        "Methanol",
        "Acetone",
        "Benzene",
        "Glycerol",
        "Toluene",
        "Hexane",
        "Phenol",
        "Xylene",
        "Octane",
        "Pentane",
        "Butanol",
        "Propanol",
        "Aniline",
        "Pyridine",
    ],
    "City": [*CITIES, "Bergen", "Graz", "Utrecht"],
    "Product": [
        "Stapler",
        "Monitor",
        "Keyboard",
        "Headset",
        "Router",
        "Printer",
        "Scanner",
        "Webcam",
        "Projector",
        "Charger",
        "Dock",
        "Tablet",
        "Laptop",
        "Speaker",
        "Shredder",
    ],
}
ATTRIBUTES = {
    "Substance": ("Melting point", "Boiling point", "Density", "Molar mass", "Flash point"),
    "City": ("Population", "Area", "Founded", "Elevation", "Annual rainfall"),
    "Product": ("Price", "Weight", "Stock", "Warranty months", "Shelf"),
}
TABLE_QUESTIONS = (
    "What is the {attribute} of {entity}?",
    "What is {entity}'s {attribute}?",
    "Which {attribute} does {entity} have?",
)


def data_table(seed: int) -> FormDocument:
    """A headed table of measurements (Markdown or HTML), a row per entity: asked
    for one cell by its row's name and its column's header."""
    rng = random.Random(f"data_table:{seed}")
    kind = rng.choice(sorted(ENTITIES))
    entities = rng.sample(ENTITIES[kind], rng.randint(6, 12))
    attributes = rng.sample(ATTRIBUTES[kind], rng.randint(3, 5))
    missing = [a for a in ATTRIBUTES[kind] if a not in attributes]
    used: set[str] = set()

    def value() -> str:
        while True:
            made = rng.choice(
                (
                    f"{rng.randint(-120, 3000)}",
                    f"{rng.randint(0, 999)}.{rng.randint(0, 9)}",
                    f"{rng.randint(1, 99):,}.{rng.randint(10, 99)}",
                )
            )
            if made not in used:
                used.add(made)
                return made

    rows = [[e, *(value() for _ in attributes)] for e in entities]
    header = [rng.choice((kind, "Name", kind + " name")), *attributes]
    questions = []
    for row in rows:
        column = rng.randrange(len(attributes))
        wording = rng.choice(TABLE_QUESTIONS)
        question = wording.format(attribute=attributes[column].lower(), entity=row[0])
        questions.append(FormQuestion(question, row[column + 1], 0, None, row[0]))
    for entity in rng.sample(entities, min(2, len(entities))):
        if missing:
            asked = rng.choice(missing).lower()
            questions.append(FormQuestion(f"What is the {asked} of {entity}?", None, 0, None))
    title = rng.choice((f"{kind} data", f"{kind} reference table", f"Measured {kind.lower()}s"))
    if rng.random() < 0.5:
        lines = [f"# {title}", "", "| " + " | ".join(header) + " |"]
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        data, name = ("\n".join(lines) + "\n").encode(), f"data_table-{seed}.md"
    else:
        from html import escape

        head = "".join(f"<th>{escape(h)}</th>" for h in header)
        body = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        html = f"<html><body><h1>{title}</h1><table><tr>{head}</tr>{body}</table></body></html>"
        data, name = html.encode(), f"data_table-{seed}.html"
    return FormDocument(name, data, "data_table", tuple(questions), frozenset(entities))


SECTIONS = ("health", "travel", "pension", "laptop", "parking", "training", "dental", "gym")
KEYS = {
    "provider": ("Who is the {section} provider?", "Which company provides the {section} plan?"),
    "contact": ("Who is the {section} contact?", "Whom do I contact about {section}?"),
    "limit": ("What is the {section} limit?", "How much does the {section} plan cover?"),
    "deadline": ("What is the {section} deadline?", "By when must {section} claims be filed?"),
    "coverage": ("What does the {section} plan cover?", "Who is covered by the {section} plan?"),
}
PROVIDERS = ["MediCare Plus", "Allianz Care", "Vita Group", "Northwind Benefits", "Helix Mutual"]
PEOPLE_CONTACTS = ["Dana Ortiz", "Lee Park", "Sam Rivera", "Kim Novak", "Alex Moreau"]


def _setting(rng: random.Random, key: str, section: str) -> str:
    if key == "provider":
        return rng.choice(PROVIDERS) + f" {section.title()}"
    if key == "contact":
        return rng.choice(PEOPLE_CONTACTS) + f" ({section})"
    if key == "limit":
        return f"{rng.randint(2, 90) * 100} EUR per year"
    if key == "deadline":
        return f"{rng.randint(10, 60)} days after the event"
    return rng.choice(("employee only", "employee and family", "all staff"))


def json_records(seed: int) -> FormDocument:
    """A JSON file of nested settings ({"health": {"provider": …}}), converted to
    "**key**: value" lines under a heading per object: asked for a key of a section."""
    import json

    rng = random.Random(f"json_records:{seed}")
    sections = rng.sample(SECTIONS, rng.randint(3, 6))
    document: dict[str, dict[str, object]] = {}
    questions = []
    for section in sections:
        keys = rng.sample(sorted(KEYS), rng.randint(2, 4))
        entry: dict[str, object] = {}
        for key in keys:
            entry[key] = _setting(rng, key, section)
        entry["active"] = rng.random() < 0.8
        document[section] = entry
        for key in keys:
            wording = rng.choice(KEYS[key]).format(section=section)
            questions.append(FormQuestion(wording, str(entry[key]), 0, None, section))
        absent = [k for k in KEYS if k not in keys]
        if absent and rng.random() < 0.5:
            wording = rng.choice(KEYS[rng.choice(absent)]).format(section=section)
            questions.append(FormQuestion(wording, None, 0, None, section))
    data = json.dumps(document, indent=2).encode()
    return FormDocument(
        f"json_records-{seed}.json", data, "json_records", tuple(questions), frozenset(sections)
    )


OTHER_KINDS = {"data_table": data_table, "json_records": json_records}
