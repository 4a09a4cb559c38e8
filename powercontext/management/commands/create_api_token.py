"""Create a bearer token for a user (creating the user if needed); the token is the last line."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from context_api.auth import new_token, token_digest
from powercontext.models import ApiToken


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME (the user is created if missing). With --reviewer the user "
        "gets the permission to approve, reject and revise candidates. The token is printed as the "
        "last line of output and cannot be shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--reviewer", action="store_true", help="grant the review permission")
        parser.add_argument("--name", default="", help="a label for the token")

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"].strip()
        if not username:
            raise CommandError("username must not be blank")
        with transaction.atomic():
            user, created = get_user_model().objects.get_or_create(username=username)
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            if options["reviewer"]:
                user.user_permissions.add(
                    Permission.objects.get(codename="review_candidate", content_type__app_label="review")
                )
            token = new_token()
            ApiToken.objects.create(
                user=user, name=options["name"], digest=token_digest(token), prefix=token[:8]
            )
        role = "reviewer" if user.has_perm("review.review_candidate") else "proposer"
        self.stdout.write(f"{'created' if created else 'existing'} user {username} ({role}); token:")
        self.stdout.write(token)
