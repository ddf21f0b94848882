# A foreign key to a Bot is named `bot` everywhere (issue 22: one name per concept). The API keeps
# the contract's `agent_id`, the bot's public id.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("testsets", "0002_alter_dataset_options_alter_datasetquestion_options_and_more"),
        ("bots", "0001_initial"),
    ]

    operations = [
        migrations.RenameField(model_name="testset", old_name="agent", new_name="bot"),
        migrations.RenameField(model_name="dataset", old_name="agent", new_name="bot"),
        migrations.AlterField(
            model_name="dataset",
            name="bot",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=models.deletion.SET_NULL,
                related_name="datasets",
                to="bots.bot",
            ),
        ),
    ]
