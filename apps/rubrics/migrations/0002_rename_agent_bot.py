# A foreign key to a Bot is named `bot` everywhere (issue 22: one name per concept). The API keeps
# the contract's `agent_id`, the bot's public id.

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("rubrics", "0001_initial"),
    ]

    operations = [
        migrations.RenameField(model_name="rubric", old_name="agent", new_name="bot"),
    ]
