"""Demo documents the project generates itself (no downloads): a Markdown
handbook, a PDF policy, a DOCX travel guide, a PPTX onboarding deck and a
JSON benefits table, each with facts on known pages and sections."""

from __future__ import annotations

import json
from pathlib import Path

HANDBOOK = """# Employee Handbook

Welcome to Acme. This handbook explains how we work together.

## Records Retention

Invoices and payroll records are kept for seven years after the end of the fiscal year.
Personal data of former employees is deleted two years after they leave,
unless a legal hold applies.

## Leave

Every employee receives twenty-five days of paid annual leave per calendar year.
Unused leave of up to five days may be carried over into the first quarter of the next year.

### Parental Leave

Parents receive sixteen weeks of fully paid parental leave, which can be split into two blocks.

## Remote Work

Employees may work remotely up to three days per week after their probation period.
"""

SECURITY_PAGES = [
    (
        "Information Security Policy",
        [
            "This policy applies to every employee, contractor and system of Acme.",
            "The Chief Information Security Officer owns this policy and reviews it every year.",
        ],
    ),
    (
        "Passwords and Access",
        [
            "Passwords must be at least fourteen characters long and are never shared.",
            "Multi-factor authentication is mandatory for email, source code and the VPN.",
            "Access rights are reviewed by each manager every quarter.",
        ],
    ),
    (
        "Incident Response",
        [
            "Security incidents must be reported to the security team "
            "within one hour of discovery.",
            "The incident commander informs affected customers within seventy-two hours.",
        ],
    ),
]

TRAVEL = [
    ("Travel Policy", ["Business travel must be approved by a manager before booking."]),
    (
        "Flights",
        [
            "Flights shorter than six hours are booked in economy class.",
            "Flights of six hours or more may be booked in premium economy.",
        ],
    ),
    ("Hotels", ["Hotel costs are reimbursed up to 180 euros per night in major cities."]),
]

SLIDES = [
    ("Welcome to Acme", ["Your first week at a glance"], "Greet the new joiners warmly."),
    (
        "Your First Day",
        ["Pick up your laptop at the IT desk at 9:00", "Lunch with your team at 12:30"],
        "Mention the badge photo.",
    ),
    ("Tools We Use", ["Chat: Matrix", "Documents: the Provenance library"], ""),
]

BENEFITS = {
    "benefits": {
        "health": {"provider": "MediCare Plus", "coverage": "employee and family", "dental": True},
        "pension": {"employer_contribution_percent": 6, "vesting_years": 2},
        "allowances": [
            {"name": "Public transport", "monthly_eur": 49},
            {"name": "Home office", "monthly_eur": 30},
            {"name": "Gym", "monthly_eur": 25},
        ],
    }
}


def _pdf(path: Path) -> None:
    import pymupdf

    document = pymupdf.open()
    for title, paragraphs in SECURITY_PAGES:
        page = document.new_page()
        page.insert_text((72, 90), title, fontsize=20, fontname="helv")
        y = 130
        for paragraph in paragraphs:
            page.insert_textbox(pymupdf.Rect(72, y, 520, y + 60), paragraph, fontsize=11)
            y += 50
    document.set_toc([[1, title, number] for number, (title, _) in enumerate(SECURITY_PAGES, 1)])
    document.save(str(path))


def _docx(path: Path) -> None:
    import docx
    from docx.enum.text import WD_BREAK

    document = docx.Document()
    for index, (title, paragraphs) in enumerate(TRAVEL):
        if index:
            document.paragraphs[-1].add_run().add_break(WD_BREAK.PAGE)
        document.add_heading(title, level=1 if index == 0 else 2)
        for paragraph in paragraphs:
            document.add_paragraph(paragraph)
    document.save(str(path))


def _pptx(path: Path) -> None:
    from pptx import Presentation

    deck = Presentation()
    for title, bullets, notes in SLIDES:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    deck.save(str(path))


def demo_documents_write(folder: Path) -> list[Path]:
    """Write the demo documents into ``folder`` and return their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        name: folder / name
        for name in (
            "employee-handbook.md",
            "security-policy.pdf",
            "travel-policy.docx",
            "onboarding.pptx",
            "benefits.json",
        )
    }
    paths["employee-handbook.md"].write_text(HANDBOOK, encoding="utf-8")
    paths["benefits.json"].write_text(json.dumps(BENEFITS, indent=2), encoding="utf-8")
    _pdf(paths["security-policy.pdf"])
    _docx(paths["travel-policy.docx"])
    _pptx(paths["onboarding.pptx"])
    return list(paths.values())
