"""Create a Review Inbox reviewer who can log in: a password, and the reviewers group."""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

REVIEWERS_GROUP = "reviewers"
# The review audit in the admin, read-only (issue 22): the group may view these tables and
# nothing else there; a reviewer is made staff so that she can open the admin at all.
AUDIT_VIEW_PERMISSIONS = (
    ("review", "view_candidate"),
    ("review", "view_candidateversion"),
    ("review", "view_reviewdecision"),
    ("review", "view_reviewaction"),
    ("review", "view_candidateclaim"),
    ("powercontext", "view_artifactrevision"),
)
PASSWORD_ENV = "POWERCONTEXT_REVIEWER_PASSWORD"  # noqa: S105 (a variable name, not a password)


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


class Command(BaseCommand):
    help = (
        "Create a reviewer USERNAME who can log in to the Review Inbox (/accounts/login/) and approve, "
        "reject and revise candidates: sets the password and adds the user to the 'reviewers' group, "
        "which holds the review permission and view-only access to the review audit in the admin "
        "(the user is made staff for that). The password comes from --password-file, else from "
        f"${PASSWORD_ENV}, else from a prompt. An existing user is refused unless --update is given "
        "(then the password is replaced and the group added; API tokens are kept)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--password-file", type=Path, help="read the password from this file")
        parser.add_argument("--email", default="", help="the reviewer's e-mail address")
        parser.add_argument(
            "--update", action="store_true", help="make an existing user a reviewer and replace the password"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username = options["username"].strip()
        if not username:
            raise CommandError("username must not be blank")
        users = get_user_model().objects
        if users.filter(username=username).exists() and not options["update"]:
            raise CommandError(
                f"user {username} exists; pass --update to make it a reviewer with this password"
            )
        password = self._password(options["password_file"])
        candidate = users.filter(username=username).first() or get_user_model()(username=username)
        try:
            validate_password(password, user=candidate)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from None
        with transaction.atomic():
            user, created = users.get_or_create(username=username)
            if created and options["email"]:
                user.email = options["email"]
            user.set_password(password)
            user.is_active = True
            user.is_staff = True  # the admin's review audit, view-only (AUDIT_VIEW_PERMISSIONS)
            user.save()
            group, _ = Group.objects.get_or_create(name=REVIEWERS_GROUP)
            group.permissions.add(
                Permission.objects.get(codename="review_candidate", content_type__app_label="review"),
                *(
                    Permission.objects.get(codename=codename, content_type__app_label=app_label)
                    for app_label, codename in AUDIT_VIEW_PERMISSIONS
                ),
            )
            user.groups.add(group)
        self.stdout.write(
            f"{'created' if created else 'updated'} reviewer {username}: log in at /accounts/login/, "
            "the Inbox is /review/, the review audit (read-only) is /admin/review/reviewdecision/"
        )

    def _password(self, path: Path | None) -> str:
        if path is not None:
            try:
                password = path.read_text(encoding="utf-8").rstrip("\r\n")
            except OSError as error:
                raise CommandError(f"cannot read --password-file: {error.strerror}") from None
        elif os.environ.get(PASSWORD_ENV):
            password = os.environ[PASSWORD_ENV]
        else:
            if not stdin_is_terminal():
                raise CommandError(
                    f"no password: give --password-file or ${PASSWORD_ENV}, or run in a terminal"
                )
            password = getpass.getpass("Password: ")
            if password != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ")
        if not password:
            raise CommandError("the password must not be empty")
        return password
