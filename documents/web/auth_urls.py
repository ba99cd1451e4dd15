"""Sign-in and sign-out with Django's own views and the site's templates.

Only these two: password reset would need outgoing mail, which the
application does not configure; administrators set passwords in the admin.
"""

from django.contrib.auth import views as auth_views
from django.urls import path

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
]
