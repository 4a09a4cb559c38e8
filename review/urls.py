"""Review Inbox routes, mounted at /review/."""

from django.urls import path

from review import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("bulk/", views.queue_bulk, name="bulk"),
    path("candidates/<int:pk>/", views.candidate_detail, name="candidate"),
    path("candidates/<int:pk>/approve/", views.candidate_approve, name="approve"),
    path("candidates/<int:pk>/reject/", views.candidate_reject, name="reject"),
    path("candidates/<int:pk>/rebase/", views.candidate_rebase, name="rebase"),
    path("candidates/<int:pk>/revise/", views.candidate_revise, name="revise"),
    path("candidates/<int:pk>/merge/", views.candidate_merge, name="merge"),
    path("candidates/<int:pk>/claim/", views.candidate_claim, name="claim"),
    path("candidates/<int:pk>/unclaim/", views.candidate_unclaim, name="unclaim"),
    path("candidates/<int:pk>/reopen/", views.candidate_reopen, name="reopen"),
    path("candidates/<int:pk>/retire/", views.candidate_retire, name="retire"),
    path("candidates/<int:pk>/revert/", views.candidate_revert, name="revert"),
    path("candidates/<int:pk>/history/", views.candidate_history, name="history"),
    path("candidates/<int:pk>/request-changes/", views.candidate_request_changes, name="request-changes"),
    path("candidates/<int:pk>/comment/", views.candidate_comment, name="comment"),
    path("undo/", views.decisions_undo, name="undo"),
    path("changes-undo/", views.changes_undo, name="changes-undo"),
    path("candidates/<int:pk>/next/", views.candidate_next, name="next"),
    path("candidates/<int:pk>/previous/", views.candidate_previous, name="previous"),
    path("candidates/<int:pk>/viewing/", views.candidate_viewing, name="viewing"),
    path("reported/", views.reported_list, name="reported"),
    path("reported/<int:pk>/", views.reported_item, name="reported-item"),
    path("reported/<int:pk>/dismiss/", views.reported_dismiss, name="reported-dismiss"),
    path("reported/<int:pk>/retire/", views.reported_retire, name="reported-retire"),
    path("reported/<int:pk>/revise/", views.reported_revise, name="reported-revise"),
    path("reported/<int:pk>/undo/", views.reported_undo, name="reported-undo"),
]
