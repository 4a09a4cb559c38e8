"""Login and logout for the Review Inbox, mounted at /accounts/ (settings.LOGIN_URL)."""

from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(
            template_name="registration/login.html", redirect_authenticated_user=True
        ),
        name="login",
    ),
    # Logout is POST-only (Django 5); it lands back on the login page.
    path("logout/", auth_views.LogoutView.as_view(next_page=reverse_lazy("login")), name="logout"),
]
