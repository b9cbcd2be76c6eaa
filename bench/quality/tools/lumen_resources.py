"""Writes the resource pages of the Lumen API reference (docs/api/*.md) from the data below.

API references are generated from a description in real projects too; the prose of each
endpoint is written by hand here. Run: ``python bench/quality/tools/lumen_resources.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "lumen" / "docs" / "api"

E = dict  # endpoint
R = dict  # resource

RESOURCES: list[dict] = [
    R(
        file="customers",
        title="Customers",
        obj="customer",
        prefix="cus",
        intro="Customer objects let you charge the same person repeatedly, keep their payment methods, and track their charges, invoices and subscriptions.",
        attrs=[
            ("id", "string", "Unique identifier, `cus_...`."),
            (
                "email",
                "string",
                "The customer's email address; receipts and invoices are sent here.",
            ),
            ("name", "string", "Full name or business name."),
            ("phone", "string", "Phone number in E.164 format."),
            (
                "balance",
                "integer",
                "Current balance in the smallest currency unit; a negative balance is a credit applied to the next invoice.",
            ),
            (
                "invoice_settings.default_payment_method",
                "string",
                "Payment method used for invoices and subscriptions by default.",
            ),
            ("tax_exempt", "enum", "`none`, `exempt` or `reverse`."),
            ("metadata", "hash", "Your key-value pairs."),
            ("deleted", "boolean", "Present and true only on deleted customers."),
        ],
        endpoints=[
            E(
                verb="Create a customer",
                method="POST",
                path="/v1/customers",
                desc="Creates a new customer. All parameters are optional; a customer with no email can still be charged with an attached payment method. Email addresses are not unique: two customers may share one, so look customers up by your own id stored in `metadata` rather than by email if you need uniqueness.",
                params=[
                    ("email", "string", "optional", "Up to 512 characters."),
                    ("name", "string", "optional", "Up to 256 characters."),
                    ("phone", "string", "optional", "E.164 format."),
                    (
                        "payment_method",
                        "string",
                        "optional",
                        "A payment method id to attach to the new customer.",
                    ),
                    (
                        "invoice_settings.default_payment_method",
                        "string",
                        "optional",
                        "Must be attached to this customer.",
                    ),
                    (
                        "metadata",
                        "hash",
                        "optional",
                        "Up to 50 keys; keys up to 40 characters, values up to 500 characters. Do not store card or bank details here.",
                    ),
                ],
                returns="The customer object.",
                errors=[
                    ("email_invalid", "The email address is malformed."),
                    ("resource_missing", "`payment_method` does not exist."),
                ],
            ),
            E(
                verb="Retrieve a customer",
                method="GET",
                path="/v1/customers/:id",
                desc="Retrieves a customer. A deleted customer is returned with `deleted: true` and only its id, so that references to it keep resolving.",
                params=[],
                returns="The customer object, or a deleted-customer stub.",
                errors=[("resource_missing", "No customer with this id.")],
            ),
            E(
                verb="Update a customer",
                method="POST",
                path="/v1/customers/:id",
                desc="Updates the given parameters; parameters not sent are left unchanged. To remove a metadata key, set it to an empty string; to remove all metadata, send `metadata=` with an empty value. Changing `invoice_settings.default_payment_method` affects the next invoice of every subscription that has no payment method of its own, including invoices that are already open but not yet paid when the subscription's `collection_method` is `charge_automatically`.",
                params=[
                    ("email", "string", "optional", ""),
                    ("name", "string", "optional", ""),
                    (
                        "balance",
                        "integer",
                        "optional",
                        "Sets the balance; prefer balance transactions for an audit trail.",
                    ),
                    ("invoice_settings.default_payment_method", "string", "optional", ""),
                    ("metadata", "hash", "optional", ""),
                ],
                returns="The updated customer object.",
                errors=[("lock_timeout", "Another request is updating this customer.")],
            ),
            E(
                verb="Delete a customer",
                method="DELETE",
                path="/v1/customers/:id",
                desc="Permanently deletes a customer. It cannot be undone. Deleting a customer immediately cancels all of their active subscriptions without proration and detaches their payment methods; open invoices stay open and can still be paid or voided. Charges and refunds keep their reference to the deleted customer id. If you only need to stop billing a customer, cancel their subscriptions instead and keep the customer for your records.",
                params=[],
                returns="An object with the id and `deleted: true`.",
                errors=[("resource_missing", "No customer with this id.")],
            ),
            E(
                verb="List all customers",
                method="GET",
                path="/v1/customers",
                desc="Returns customers, newest first. See Pagination for `limit`, `starting_after` and `ending_before`.",
                params=[
                    (
                        "email",
                        "string",
                        "optional",
                        "Only customers with exactly this email, case-sensitive.",
                    ),
                    ("created", "hash", "optional", "Filter on creation time."),
                    ("limit", "integer", "optional", "1 to 100, default 10."),
                ],
                returns="A list object with a `data` array of customers.",
                errors=[],
            ),
            E(
                verb="Search customers",
                method="GET",
                path="/v1/customers/search",
                desc="Searches customers with the search query language, for example `query=email:'jane@example.com' AND metadata['crm_id']:'A-77'`. Supported fields: `email`, `name`, `phone`, `created`, `metadata`. Results can lag writes by up to a minute.",
                params=[
                    ("query", "string", "required", "The search query."),
                    (
                        "page",
                        "string",
                        "optional",
                        "The `next_page` token of the previous response.",
                    ),
                    ("limit", "integer", "optional", "1 to 100, default 10."),
                ],
                returns="A search result object with `data`, `has_more` and `next_page`.",
                errors=[],
            ),
        ],
    ),
    R(
        file="payment-methods",
        title="Payment Methods",
        obj="payment method",
        prefix="pm",
        intro="A payment method represents a customer's card or bank account. Create payment methods on the client with Lumen.js or the mobile SDKs, so that raw card numbers never touch your server, then attach them to customers for later use.",
        attrs=[
            ("id", "string", "`pm_...`"),
            ("type", "enum", "`card` or `us_bank_account`."),
            ("customer", "string", "The customer it is attached to, or null."),
            ("card.brand", "string", "`visa`, `mastercard`, `amex`, `discover`, ..."),
            ("card.last4", "string", "Last four digits."),
            ("card.exp_month", "integer", ""),
            ("card.exp_year", "integer", ""),
            ("us_bank_account.verification_status", "enum", "`pending`, `verified`, `failed`."),
        ],
        endpoints=[
            E(
                verb="Attach a payment method",
                method="POST",
                path="/v1/payment_methods/:id/attach",
                desc="Attaches a payment method to a customer. A payment method can be attached to only one customer; to move it, detach it first. Attaching does not make it the customer's default: update `invoice_settings.default_payment_method` on the customer for that. A card is checked with a zero-amount authorisation when it is attached; if the issuer declines that check, the attach fails with a `card_error` and the card is not attached. A US bank account must be verified (by instant verification or by two micro-deposits, which take one to two business days) before it can be used for payments, but it can be attached before verification.",
                params=[("customer", "string", "required", "The customer to attach to.")],
                returns="The payment method.",
                errors=[
                    ("card_declined", "The verification authorisation was declined."),
                    ("payment_method_already_attached", "Attached to another customer."),
                ],
            ),
            E(
                verb="Detach a payment method",
                method="POST",
                path="/v1/payment_methods/:id/detach",
                desc="Detaches a payment method from its customer. A detached payment method cannot be used again or reattached. Detaching the default payment method of a customer with active subscriptions is allowed, but the next renewal will fail unless another default is set.",
                params=[],
                returns="The payment method, with `customer: null`.",
                errors=[],
            ),
            E(
                verb="List a customer's payment methods",
                method="GET",
                path="/v1/customers/:id/payment_methods",
                desc="Returns the payment methods attached to a customer, newest first.",
                params=[
                    ("type", "enum", "optional", "Only this type."),
                    ("limit", "integer", "optional", "1 to 100, default 10."),
                ],
                returns="A list object.",
                errors=[],
            ),
        ],
    ),
    R(
        file="charges",
        title="Charges",
        obj="charge",
        prefix="ch",
        intro="A charge is a single attempt to move money from a customer's payment method to your account. Most integrations create charges directly for one-off payments; invoices and subscriptions create their own charges.",
        attrs=[
            ("id", "string", "`ch_...`"),
            ("amount", "integer", "Amount in the smallest currency unit (cents for USD)."),
            ("amount_captured", "integer", ""),
            ("amount_refunded", "integer", ""),
            ("currency", "string", "Three-letter ISO code, lowercase."),
            ("captured", "boolean", ""),
            ("status", "enum", "`pending`, `succeeded` or `failed`."),
            ("failure_code", "string", "The error code if the charge failed."),
            ("payment_method", "string", ""),
            ("customer", "string", ""),
            ("refunded", "boolean", "True when fully refunded."),
            ("dispute", "string", "The dispute id if the charge was disputed."),
            ("receipt_email", "string", ""),
        ],
        endpoints=[
            E(
                verb="Create a charge",
                method="POST",
                path="/v1/charges",
                desc="Charges a payment method. If the payment method needs additional authentication (3-D Secure), the charge fails with the code `authentication_required`; use payment intents for flows that may need authentication. By default the charge is captured immediately. With `capture=false` the charge only authorises the amount: the funds are held on the customer's card and you capture them later with the capture endpoint. Card networks let an authorisation stand for a limited time: an uncaptured charge expires after 7 days, after which it is released automatically and any capture attempt fails with `charge_expired_for_capture`. Authorise-then-capture is meant for businesses that ship goods after the order, or that need to adjust the amount downwards (for example a hotel deposit). Bank debits (`us_bank_account`) are created in status `pending` and usually succeed or fail within four business days; listen to `charge.succeeded` and `charge.failed` rather than polling. The minimum amount is 50 cents for USD (or the equivalent in other currencies) and the maximum is 99,999,999 in the smallest unit. The statement descriptor shown on the customer's card statement is your account's descriptor followed by `statement_descriptor_suffix` if you send one.",
                params=[
                    (
                        "amount",
                        "integer",
                        "required",
                        "Positive integer in the smallest currency unit.",
                    ),
                    ("currency", "string", "required", "Lowercase ISO code."),
                    (
                        "customer",
                        "string",
                        "optional",
                        "Required when `payment_method` is attached to a customer.",
                    ),
                    ("payment_method", "string", "required", ""),
                    ("capture", "boolean", "optional", "Default `true`."),
                    ("description", "string", "optional", "Up to 1000 characters."),
                    (
                        "statement_descriptor_suffix",
                        "string",
                        "optional",
                        "Up to 12 characters, letters, digits and spaces.",
                    ),
                    (
                        "receipt_email",
                        "string",
                        "optional",
                        "Sends a receipt to this address when the charge succeeds, in live mode only.",
                    ),
                    ("metadata", "hash", "optional", ""),
                ],
                returns="The charge object if the charge succeeded or is pending. A declined charge answers `402` with a `card_error` and the failed charge's id in `error.charge`.",
                errors=[
                    ("amount_too_small", "Below the currency's minimum."),
                    ("authentication_required", "The card requires 3-D Secure."),
                    ("card_declined", "The issuer declined; see `decline_code`."),
                    ("expired_card", ""),
                ],
            ),
            E(
                verb="Capture a charge",
                method="POST",
                path="/v1/charges/:id/capture",
                desc="Captures an uncaptured charge. You can capture less than the authorised amount by sending `amount_to_capture`; the rest of the authorisation is released and cannot be captured later. A charge can be captured only once.",
                params=[
                    (
                        "amount_to_capture",
                        "integer",
                        "optional",
                        "At most the authorised amount. Default: the full amount.",
                    )
                ],
                returns="The charge, with `captured: true`.",
                errors=[
                    ("charge_already_captured", ""),
                    ("charge_expired_for_capture", "More than 7 days after authorisation."),
                ],
            ),
            E(
                verb="Retrieve a charge",
                method="GET",
                path="/v1/charges/:id",
                desc="Retrieves a charge.",
                params=[],
                returns="The charge object.",
                errors=[],
            ),
            E(
                verb="List all charges",
                method="GET",
                path="/v1/charges",
                desc="Returns charges, newest first.",
                params=[
                    ("customer", "string", "optional", "Only this customer's charges."),
                    ("created", "hash", "optional", ""),
                    ("limit", "integer", "optional", "1 to 100, default 10."),
                ],
                returns="A list object.",
                errors=[],
            ),
        ],
    ),
    R(
        file="refunds",
        title="Refunds",
        obj="refund",
        prefix="re",
        intro="A refund returns money from a charge to the customer's payment method. You can refund a charge in full or in several partial refunds until the whole amount is refunded.",
        attrs=[
            ("id", "string", "`re_...`"),
            ("amount", "integer", ""),
            ("charge", "string", ""),
            (
                "status",
                "enum",
                "`pending`, `requires_action`, `succeeded`, `failed` or `canceled`.",
            ),
            ("reason", "enum", "`duplicate`, `fraudulent`, `requested_by_customer` or null."),
            (
                "failure_reason",
                "string",
                "Why a refund failed, for example `expired_or_canceled_card`.",
            ),
        ],
        endpoints=[
            E(
                verb="Create a refund",
                method="POST",
                path="/v1/refunds",
                desc="Refunds a charge that was previously created and captured. Without `amount` the whole remaining amount is refunded; with it, a partial refund, and further partial refunds can follow until the charge is fully refunded. A charge can be refunded up to 180 days after it was created; older charges answer `charge_too_old_for_refund`, and you must return the money another way, for example with a payout to the customer's bank account outside Lumen. The processing fees Lumen took on the original charge are not returned when you refund, in full or in part. Card refunds appear on the customer's statement within 5 to 10 business days, depending on the issuer; there is nothing you or Lumen can do to speed that up, and the refund's `status` becomes `succeeded` as soon as the card network accepted it, not when the customer sees it. For bank debits the refund is sent as a credit transfer and can fail (for example when the account was closed): the refund then goes to `failed`, the amount is returned to your balance, and the event `refund.failed` is sent. Setting `reason=fraudulent` also adds the card and email to your block lists, so that the same card cannot pay you again. Refunding a charge that is disputed is not possible; respond to the dispute instead.",
                params=[
                    ("charge", "string", "required", "The charge to refund."),
                    ("amount", "integer", "optional", "Up to the remaining refundable amount."),
                    (
                        "reason",
                        "enum",
                        "optional",
                        "`duplicate`, `fraudulent` or `requested_by_customer`.",
                    ),
                    ("metadata", "hash", "optional", ""),
                ],
                returns="The refund object.",
                errors=[
                    ("charge_already_refunded", "Nothing left to refund."),
                    ("charge_too_old_for_refund", "Created more than 180 days ago."),
                    ("charge_disputed", "The charge has an open dispute."),
                ],
            ),
            E(
                verb="Cancel a refund",
                method="POST",
                path="/v1/refunds/:id/cancel",
                desc="Cancels a refund in status `requires_action`. Card refunds are processed immediately and cannot be canceled; only refunds to bank accounts that wait for the customer to confirm their account details can be.",
                params=[],
                returns="The refund, with `status: canceled`.",
                errors=[("refund_not_cancelable", "The refund is not in `requires_action`.")],
            ),
            E(
                verb="Retrieve a refund",
                method="GET",
                path="/v1/refunds/:id",
                desc="Retrieves a refund.",
                params=[],
                returns="The refund object.",
                errors=[],
            ),
            E(
                verb="List all refunds",
                method="GET",
                path="/v1/refunds",
                desc="Returns refunds, newest first, optionally for one charge.",
                params=[
                    ("charge", "string", "optional", ""),
                    ("limit", "integer", "optional", "1 to 100, default 10."),
                ],
                returns="A list object.",
                errors=[],
            ),
        ],
    ),
    R(
        file="invoices",
        title="Invoices",
        obj="invoice",
        prefix="in",
        intro="Invoices are statements of amounts owed by a customer. They are created by subscriptions at each billing period, or by you for one-off billing, and are paid automatically from the customer's default payment method or sent to the customer to pay.",
        attrs=[
            ("id", "string", "`in_...`"),
            ("status", "enum", "`draft`, `open`, `paid`, `uncollectible` or `void`."),
            ("number", "string", "Assigned at finalisation, for example `F3A9C2-0042`."),
            ("collection_method", "enum", "`charge_automatically` or `send_invoice`."),
            ("amount_due", "integer", ""),
            ("amount_paid", "integer", ""),
            ("due_date", "timestamp", "Only for `send_invoice`."),
            ("hosted_invoice_url", "string", "A page where the customer can pay."),
            ("subscription", "string", ""),
        ],
        endpoints=[
            E(
                verb="Create an invoice",
                method="POST",
                path="/v1/invoices",
                desc="Creates a draft invoice for a customer. Add lines with invoice items before or after creating it. An invoice may have at most 250 lines. With `collection_method=send_invoice`, the invoice is emailed when finalised and is due `days_until_due` days later (default 30).",
                params=[
                    ("customer", "string", "required", ""),
                    ("collection_method", "enum", "optional", "Default `charge_automatically`."),
                    ("days_until_due", "integer", "optional", "Only with `send_invoice`."),
                    (
                        "auto_advance",
                        "boolean",
                        "optional",
                        "Whether Lumen finalises and collects the invoice on its own.",
                    ),
                    ("description", "string", "optional", ""),
                ],
                returns="The draft invoice.",
                errors=[],
            ),
            E(
                verb="Finalize an invoice",
                method="POST",
                path="/v1/invoices/:id/finalize",
                desc="Finalises a draft invoice: it gets its number, becomes `open` and can no longer be edited (only voided or marked uncollectible). Invoices created by subscriptions are finalised automatically one hour after they are created, which is the window in which you can add extra lines, for example usage charges, by listening to `invoice.created`. One-off invoices with `auto_advance=true` are finalised after the same hour; with `auto_advance=false` they stay drafts until you finalise them. Drafts that were never finalised are deleted after 90 days.",
                params=[("auto_advance", "boolean", "optional", "")],
                returns="The invoice, `open`.",
                errors=[("invoice_not_editable", "The invoice is not a draft.")],
            ),
            E(
                verb="Pay an invoice",
                method="POST",
                path="/v1/invoices/:id/pay",
                desc="Attempts payment of an open invoice now, out of the normal collection schedule. With `paid_out_of_band=true` the invoice is marked paid without charging, for example when the customer paid by cheque.",
                params=[
                    ("payment_method", "string", "optional", ""),
                    ("paid_out_of_band", "boolean", "optional", ""),
                ],
                returns="The invoice.",
                errors=[
                    (
                        "invoice_payment_intent_requires_action",
                        "The customer must authenticate the payment.",
                    )
                ],
            ),
            E(
                verb="Void an invoice",
                method="POST",
                path="/v1/invoices/:id/void",
                desc="Voids an open invoice: it stays in your records with status `void` and can no longer be paid. Voiding is final. Use it for invoices created by mistake; to forgive a debt you still want to record, mark the invoice uncollectible instead, which keeps it payable if the customer pays later. Paid invoices cannot be voided; refund their charge instead, and issue a credit note if you need a corrected document.",
                params=[],
                returns="The invoice, `void`.",
                errors=[("invoice_not_open", "")],
            ),
            E(
                verb="Mark an invoice uncollectible",
                method="POST",
                path="/v1/invoices/:id/mark_uncollectible",
                desc="Marks an open invoice as uncollectible for your accounting. It can still be paid.",
                params=[],
                returns="The invoice.",
                errors=[],
            ),
            E(
                verb="Send an invoice",
                method="POST",
                path="/v1/invoices/:id/send",
                desc="Emails an open `send_invoice` invoice to the customer again. Emails are not sent in test mode.",
                params=[],
                returns="The invoice.",
                errors=[],
            ),
        ],
    ),
    R(
        file="subscriptions",
        title="Subscriptions",
        obj="subscription",
        prefix="sub",
        intro="Subscriptions charge a customer on a recurring basis. Each billing period, the subscription creates an invoice for its items' prices and collects it.",
        attrs=[
            ("id", "string", "`sub_...`"),
            (
                "status",
                "enum",
                "`incomplete`, `incomplete_expired`, `trialing`, `active`, `past_due`, `canceled`, `unpaid` or `paused`.",
            ),
            ("items", "list", "Up to 20 items, each a price and a quantity."),
            ("current_period_start", "timestamp", ""),
            ("current_period_end", "timestamp", ""),
            ("cancel_at_period_end", "boolean", ""),
            ("trial_end", "timestamp", ""),
            ("pause_collection", "hash", ""),
        ],
        endpoints=[
            E(
                verb="Create a subscription",
                method="POST",
                path="/v1/subscriptions",
                desc="Creates a subscription for a customer. The first invoice is created and paid immediately unless there is a trial. With `payment_behavior=default_incomplete`, the subscription starts as `incomplete` and becomes `active` when its first invoice is paid; an incomplete subscription whose first invoice is not paid within 23 hours moves to `incomplete_expired` and its invoice is voided, and it cannot be reactivated. Trials can last up to 730 days; during a trial no invoice is charged and the status is `trialing`. A subscription can have up to 20 items, but all recurring prices in one subscription must share the same billing interval.",
                params=[
                    ("customer", "string", "required", ""),
                    ("items", "list", "required", "Each with `price` and `quantity`."),
                    ("trial_period_days", "integer", "optional", "Up to 730."),
                    (
                        "payment_behavior",
                        "enum",
                        "optional",
                        "`allow_incomplete`, `default_incomplete`, `error_if_incomplete`.",
                    ),
                    ("billing_cycle_anchor", "timestamp", "optional", ""),
                    (
                        "proration_behavior",
                        "enum",
                        "optional",
                        "`create_prorations` (default), `none`, `always_invoice`.",
                    ),
                ],
                returns="The subscription.",
                errors=[
                    ("resource_missing", ""),
                    ("subscription_price_interval_mismatch", "Prices with different intervals."),
                ],
            ),
            E(
                verb="Update a subscription",
                method="POST",
                path="/v1/subscriptions/:id",
                desc="Changes items, quantities or the billing anchor. By default a change in the middle of a period creates proration items: a credit for the unused time on the old price and a charge for the remaining time on the new one, computed to the second. The proration items are added to the next invoice unless `proration_behavior=always_invoice`, which invoices them at once; `none` disables proration entirely. Upgrading from a monthly to a yearly price resets the billing cycle anchor to the time of the change and invoices immediately.",
                params=[
                    ("items", "list", "optional", ""),
                    ("proration_behavior", "enum", "optional", ""),
                    ("cancel_at_period_end", "boolean", "optional", ""),
                    (
                        "pause_collection",
                        "hash",
                        "optional",
                        "`behavior`: `keep_as_draft`, `mark_uncollectible` or `void`.",
                    ),
                ],
                returns="The subscription.",
                errors=[],
            ),
            E(
                verb="Cancel a subscription",
                method="DELETE",
                path="/v1/subscriptions/:id",
                desc="Cancels a subscription immediately. The customer is not charged again, and by default no proration credit is issued for the unused part of the period; send `prorate=true` to credit it to the customer's balance. Pending invoice items are left for the next invoice of the customer unless `invoice_now=true`. To cancel at the end of the current period instead, update the subscription with `cancel_at_period_end=true`; it stays `active` until then. A canceled subscription cannot be reactivated; create a new one.",
                params=[
                    ("prorate", "boolean", "optional", ""),
                    ("invoice_now", "boolean", "optional", ""),
                ],
                returns="The subscription, `canceled`.",
                errors=[],
            ),
            E(
                verb="Failed payments and retries",
                method="",
                path="",
                desc="When a renewal invoice cannot be charged, the subscription becomes `past_due` and Lumen retries the payment on the schedule configured in the billing settings: by default up to 4 retries over 21 days, timed by Lumen's retry model. After the last failed retry, the subscription is canceled, marked `unpaid` or left `past_due`, according to the same settings. Each failed attempt sends `invoice.payment_failed`; the customer receives an email with a link to update their card if you enabled customer emails.",
                params=None,
                returns=None,
                errors=[],
            ),
        ],
    ),
    R(
        file="prices",
        title="Products and Prices",
        obj="price",
        prefix="price",
        intro="Products describe what you sell; prices say how much and how often. A product can have several prices, for example a monthly and a yearly one, or one per currency.",
        attrs=[
            ("id", "string", "`price_...`"),
            ("product", "string", ""),
            ("unit_amount", "integer", ""),
            ("currency", "string", ""),
            ("recurring.interval", "enum", "`day`, `week`, `month` or `year`."),
            (
                "recurring.interval_count",
                "integer",
                "At most one year's worth (for example 12 months or 52 weeks).",
            ),
            ("active", "boolean", ""),
            ("lookup_key", "string", "Your stable name for the price."),
        ],
        endpoints=[
            E(
                verb="Create a price",
                method="POST",
                path="/v1/prices",
                desc="Creates a price for a product. Prices are immutable apart from `active`, `nickname`, `lookup_key` and `metadata`: to change an amount, create a new price and move subscriptions to it. With `transfer_lookup_key=true`, the lookup key moves from the old price to the new one, so code that looks prices up by key picks up the change without a deploy.",
                params=[
                    ("product", "string", "required", ""),
                    ("unit_amount", "integer", "required", ""),
                    ("currency", "string", "required", ""),
                    ("recurring", "hash", "optional", "`interval` and `interval_count`."),
                    ("lookup_key", "string", "optional", "Up to 200 characters."),
                    ("transfer_lookup_key", "boolean", "optional", ""),
                ],
                returns="The price.",
                errors=[],
            ),
            E(
                verb="Archive a price",
                method="POST",
                path="/v1/prices/:id",
                desc="Prices cannot be deleted once they were used. Set `active=false` to archive a price: existing subscriptions keep it, but it cannot be used for new ones. A product can be deleted only if it has no prices; archive the product otherwise.",
                params=[("active", "boolean", "optional", "")],
                returns="The price.",
                errors=[],
            ),
            E(
                verb="List prices",
                method="GET",
                path="/v1/prices",
                desc="Returns prices, optionally filtered by product, `active`, `type` or `lookup_keys` (up to 10 keys).",
                params=[
                    ("product", "string", "optional", ""),
                    ("lookup_keys", "list", "optional", ""),
                ],
                returns="A list object.",
                errors=[],
            ),
        ],
    ),
    R(
        file="events",
        title="Events",
        obj="event",
        prefix="evt",
        intro="Events record changes in your account. Each webhook delivery carries one event, and you can list and retrieve events with the API.",
        attrs=[
            ("id", "string", "`evt_...`"),
            ("type", "string", "For example `charge.succeeded`."),
            (
                "data.object",
                "object",
                "The object as it was after the change, rendered in the event's API version.",
            ),
            (
                "data.previous_attributes",
                "hash",
                "For `*.updated` events, the changed attributes' previous values.",
            ),
            ("api_version", "string", ""),
            ("pending_webhooks", "integer", "Endpoints that have not yet acknowledged the event."),
            ("request.id", "string", "The API request that caused it, if any."),
        ],
        endpoints=[
            E(
                verb="Retrieve an event",
                method="GET",
                path="/v1/events/:id",
                desc="Retrieves an event created in the last 30 days. Older events are deleted and answer `resource_missing`; if you need a longer history, store the events your webhook receives.",
                params=[],
                returns="The event.",
                errors=[],
            ),
            E(
                verb="List all events",
                method="GET",
                path="/v1/events",
                desc="Lists events of the last 30 days, newest first. Use it to catch up after your webhook endpoint was down or disabled: list with `created[gte]` set to the time of the outage and process the events you have not seen, skipping the ids you already recorded.",
                params=[
                    ("type", "string", "optional", "A type, or a wildcard like `invoice.*`."),
                    ("types", "list", "optional", "Up to 20 types."),
                    ("created", "hash", "optional", ""),
                    (
                        "delivery_success",
                        "boolean",
                        "optional",
                        "Only events whose delivery failed (false) or succeeded (true).",
                    ),
                ],
                returns="A list object.",
                errors=[],
            ),
            E(
                verb="Event types",
                method="",
                path="",
                desc="The types you will handle most often: `charge.succeeded`, `charge.failed`, `charge.refunded`, `charge.dispute.created`, `customer.subscription.created`, `customer.subscription.updated`, `customer.subscription.deleted`, `customer.subscription.trial_will_end` (sent three days before a trial ends), `invoice.created`, `invoice.finalized`, `invoice.paid`, `invoice.payment_failed`, `payout.paid`, `payout.failed`, `refund.failed`.",
                params=None,
                returns=None,
                errors=[],
            ),
        ],
    ),
    R(
        file="disputes",
        title="Disputes",
        obj="dispute",
        prefix="dp",
        intro="A dispute (chargeback) happens when a cardholder asks their bank to reverse a charge. The disputed amount and a dispute fee are taken from your balance when the dispute opens.",
        attrs=[
            ("id", "string", "`dp_...`"),
            ("charge", "string", ""),
            ("amount", "integer", ""),
            (
                "reason",
                "enum",
                "`fraudulent`, `product_not_received`, `duplicate`, `subscription_canceled`, ...",
            ),
            (
                "status",
                "enum",
                "`warning_needs_response`, `needs_response`, `under_review`, `won`, `lost`.",
            ),
            ("evidence_details.due_by", "timestamp", "Deadline for evidence."),
        ],
        endpoints=[
            E(
                verb="Update a dispute",
                method="POST",
                path="/v1/disputes/:id",
                desc="Adds evidence to a dispute. Evidence is a set of fields (customer communication, shipping documentation, refund policy, ...) and uploaded files, which together must not exceed 4.5 MB and 50 pages. Evidence can be saved and edited several times; it is sent to the bank only when you set `submit=true`, or automatically at `evidence_details.due_by`, which is usually 7 to 21 days after the dispute opened depending on the network. You can submit only once. When the dispute opens, Lumen deducts the disputed amount and a 15.00 USD dispute fee from your balance; if you win, both are returned, and if you lose, neither is. The bank's decision usually takes 60 to 75 days.",
                params=[
                    ("evidence", "hash", "optional", ""),
                    ("submit", "boolean", "optional", "Default false."),
                    ("metadata", "hash", "optional", ""),
                ],
                returns="The dispute.",
                errors=[("dispute_already_submitted", "")],
            ),
            E(
                verb="Close a dispute",
                method="POST",
                path="/v1/disputes/:id/close",
                desc="Accepts the dispute: you concede, and the dispute is marked `lost`. This cannot be undone.",
                params=[],
                returns="The dispute.",
                errors=[],
            ),
            E(
                verb="List all disputes",
                method="GET",
                path="/v1/disputes",
                desc="Returns disputes, newest first.",
                params=[("charge", "string", "optional", "")],
                returns="A list object.",
                errors=[],
            ),
        ],
    ),
    R(
        file="payouts",
        title="Payouts",
        obj="payout",
        prefix="po",
        intro="A payout sends funds from your Lumen balance to your bank account. Payouts happen automatically on a schedule, or manually when you create them.",
        attrs=[
            ("id", "string", "`po_...`"),
            ("amount", "integer", ""),
            ("arrival_date", "timestamp", "Expected date the funds reach the bank."),
            ("method", "enum", "`standard` or `instant`."),
            ("status", "enum", "`pending`, `in_transit`, `paid`, `failed` or `canceled`."),
            ("failure_code", "string", "For example `account_closed`."),
        ],
        endpoints=[
            E(
                verb="Create a payout",
                method="POST",
                path="/v1/payouts",
                desc="Sends funds to your bank account now. Manual payouts are possible only when the payout schedule is set to manual; with an automatic schedule (by default daily, for funds that became available two business days earlier), Lumen creates the payouts. With `method=instant`, the funds arrive within 30 minutes, at any time of day, to an eligible debit card; instant payouts cost 1% of the amount, at least 0.50 USD, and are limited to 10,000 USD per payout.",
                params=[
                    ("amount", "integer", "required", ""),
                    ("currency", "string", "required", ""),
                    ("method", "enum", "optional", "`standard` (default) or `instant`."),
                    ("destination", "string", "optional", "A bank account or debit card id."),
                ],
                returns="The payout.",
                errors=[("balance_insufficient", ""), ("instant_payouts_unsupported", "")],
            ),
            E(
                verb="Cancel a payout",
                method="POST",
                path="/v1/payouts/:id/cancel",
                desc="Cancels a payout that is still `pending`. Once it is `in_transit` it can no longer be canceled. The funds return to your balance.",
                params=[],
                returns="The payout.",
                errors=[],
            ),
            E(
                verb="Failed payouts",
                method="",
                path="",
                desc="A payout can fail days after it was marked `paid` if the bank returns it (for example `account_closed` or `no_account`). The event `payout.failed` is sent, the funds return to your balance, and automatic payouts are paused until you update your bank account details.",
                params=None,
                returns=None,
                errors=[],
            ),
        ],
    ),
]


def example(res: dict, ep: dict) -> str:
    sample = {"id": f"{res['prefix']}_1Nv0FG2eZvKYlo2C", "object": res["obj"].replace(" ", "_")}
    req = f'curl https://api.lumenpay.dev{ep["path"].replace(":id", sample["id"])} \\\n  -H "Authorization: Bearer sk_test_4eC39HqLyjWDarjtT1zdp7dc"'
    if ep["method"] == "POST" and ep["params"]:
        req += "".join(f" \\\n  -d {p[0]}=..." for p in ep["params"][:2])
    if ep["method"] == "DELETE":
        req = req.replace("curl ", "curl -X DELETE ")
    return f"```bash\n{req}\n```\n\n```json\n{json.dumps(sample, indent=2)}\n```"


def render(res: dict) -> str:
    out = [
        f"# {res['title']}",
        "",
        res["intro"],
        "",
        f"## The {res['obj']} object",
        "",
        "| Attribute | Type | Description |",
        "| --- | --- | --- |",
    ]
    out += [f"| `{a}` | {t} | {d} |" for a, t, d in res["attrs"]]
    out.append("")
    for ep in res["endpoints"]:
        out += [f"## {ep['verb']}", ""]
        if ep["path"]:
            out += [f"`{ep['method']} {ep['path']}`", ""]
        out += [ep["desc"], ""]
        if ep["params"] is None:
            continue
        out += ["### Parameters", ""]
        if ep["params"]:
            out += [f"- `{n}` ({t}, {r}){': ' + d if d else ''}" for n, t, r, d in ep["params"]]
        else:
            out.append("No parameters.")
        out += ["", "### Returns", "", ep["returns"], ""]
        if ep["errors"]:
            out += ["### Errors", "", "| Code | When |", "| --- | --- |"]
            out += [f"| `{c}` | {w} |" for c, w in ep["errors"]]
            out.append("")
        out += ["### Example", "", example(res, ep), ""]
    return "\n".join(out)


def main() -> None:
    for res in RESOURCES:
        (OUT / f"{res['file']}.md").write_text(render(res))
    print(f"{len(RESOURCES)} resource pages written to {OUT}")


if __name__ == "__main__":
    main()
