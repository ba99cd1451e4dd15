"""Every answer carries a plain-language confidence (citations/confidence.py).

Answers given before have empty fields, which the audit ledger leaves out of their
canonical content (audit.ledger.ADDED_COLUMNS): their chain still verifies.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('citations', '0011_answer_feedback'),
    ]

    operations = [
        migrations.AddField(
            model_name='queryexecution',
            name='confidence',
            field=models.CharField(blank=True, default='', max_length=10),
        ),
        migrations.AddField(
            model_name='queryexecution',
            name='confidence_note',
            field=models.TextField(blank=True, default=''),
        ),
    ]
