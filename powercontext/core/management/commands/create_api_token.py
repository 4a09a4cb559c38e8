"""Create a bearer token for a user (creating the user if needed); the token is the last line."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from powercontext.core.models import ApiToken
from powercontext.core.tokens import api_token_create


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME (the user is created if missing). With --reviewer the user "
        "gets the permission to approve, reject and revise candidates. The token is printed as the "
        "last line of output and cannot be shown again. With --scope (repeatable) the token may only "
        "read and write those scopes. With --operator the token may also retire Memory entries and "
        "run flush (a reviewer's token may too)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--reviewer", action="store_true", help="grant the review permission")
        parser.add_argument(
            "--operator",
            action="store_true",
            help="the operator role: may also retire Memory and flush (not the monitoring token)",
        )
        parser.add_argument("--name", default="", help="a label for the token")
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            dest="scopes",
            metavar="SCOPE",
            help="limit the token to this scope id (repeat for several); default: every scope",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"].strip()
        if not username:
            raise CommandError("username must not be blank")
        scopes = options["scopes"]
        if any(not scope.strip() or len(scope) > 256 for scope in scopes):
            raise CommandError("each --scope must be a non-blank scope id of at most 256 characters")
        with transaction.atomic():
            user, created = get_user_model().objects.get_or_create(username=username)
            if created:
                user.set_unusable_password()
                user.save(update_fields=["password"])
            if options["reviewer"]:
                user.user_permissions.add(
                    Permission.objects.get(codename="review_candidate", content_type__app_label="review")
                )
        token_role = ApiToken.Role.OPERATOR if options["operator"] else ApiToken.Role.AGENT
        _, token = api_token_create(user=user, name=options["name"], scopes=scopes, role=token_role)
        role = (
            "reviewer"
            if user.has_perm("review.review_candidate")
            else ("operator" if options["operator"] else "proposer")
        )
        limit = f", scopes: {', '.join(scopes)}" if scopes else ""
        self.stdout.write(f"{'created' if created else 'existing'} user {username} ({role}{limit}); token:")
        self.stdout.write(token)
