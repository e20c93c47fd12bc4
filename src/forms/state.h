/* forms/state: the tax form state machine (spec § Tax form status), pure C
 * with no SQL, so that every allowed and refused transition is decided in one
 * place and tested on its own.
 *
 *   (none)    --generate--> Generated   a new form, a new form_id
 *   Generated --generate--> Generated   its content is refreshed in place (same
 *                                       form_id); FORM_STATUS_UPDATE is emitted
 *                                       again, since the retrievable form changed
 *   Generated --file------> Filed       content unchanged from Generated
 *   Generated --delete----> Deleted     no longer retrievable
 *   Filed     --generate--> refused     a filed form is never overwritten
 *   Filed     --file/delete-> refused   Filed is final; it cannot be deleted
 *   Deleted   --file/delete-> refused   Deleted is final
 *
 * "generate" is decided against the live form of (account, form type, tax
 * year), the one not Deleted; a deleted form is history, so generating after
 * a deletion starts from (none) and makes a new form with a new form_id. */
#ifndef TAXD_FORMS_STATE_H
#define TAXD_FORMS_STATE_H

#include <stdbool.h>

typedef enum forms_status {
    FORMS_NONE = 0, /* no live form: never generated, or only deleted ones */
    FORMS_GENERATED,
    FORMS_FILED,
    FORMS_DELETED,
} forms_status_t;

typedef enum forms_action { FORMS_GENERATE, FORMS_FILE, FORMS_DELETE } forms_action_t;

typedef enum forms_decision {
    FORMS_CREATE,          /* generate from (none): insert a new form, Generated */
    FORMS_REFRESH,         /* generate over Generated: same form, new content */
    FORMS_MOVE,            /* file or delete: the form moves to *next */
    FORMS_REFUSED_FILED,   /* the form is Filed: final, and never regenerated */
    FORMS_REFUSED_DELETED, /* the form is Deleted: final */
    FORMS_REFUSED_MISSING, /* file or delete with no form */
} forms_decision_t;

/* What `action` does to a form in `current`; *next is the status the form
 * has afterwards (FORMS_GENERATED for create and refresh, the target for a
 * move, `current` when refused). */
forms_decision_t forms_decide(forms_status_t current, forms_action_t action,
                              forms_status_t *next);

/* True for the decisions that change nothing. */
bool forms_refused(forms_decision_t decision);

/* "Generated", "Filed", "Deleted" (the spec's spelling); NULL for FORMS_NONE. */
const char *forms_status_name(forms_status_t status);
/* The status named `name`; false for anything else. */
bool forms_status_parse(const char *name, forms_status_t *out);

/* An operator-facing sentence for a refused decision ("the form is Filed,
 * which is final"); "" for decisions that are not refusals. Static. */
const char *forms_refusal_reason(forms_decision_t decision, forms_action_t action);

#endif
