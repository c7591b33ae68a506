# Lineage of runs (issue 8): a re-run or fork names its parent run (and the turn it was forked at); a turn copied
# into a fork names the turn it was copied from.

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('debates', '0005_archive_indexes'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='forked_at_key',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='run',
            name='parent',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='children', to='debates.run'),
        ),
        migrations.AddField(
            model_name='turn',
            name='copied_from',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='copies', to='debates.turn'),
        ),
    ]
