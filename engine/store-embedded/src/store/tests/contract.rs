//! The store passes the contract every [`FrontierStore`] implementation must pass (`crawl_core::frontier::contract`).

use crate::EmbeddedFrontier;
use crawl_core::frontier::FrontierStore;
use crawl_core::frontier::contract;

fn open(dir: &std::path::Path) -> Box<dyn FrontierStore> {
    Box::new(EmbeddedFrontier::open(dir).unwrap())
}

#[test]
fn dedup_is_exact_within_and_across_batches_and_reopen() {
    contract::dedup_is_exact_within_and_across_batches_and_reopen(&open);
}

#[test]
fn next_urls_in_queue_order_per_host() {
    contract::next_urls_in_queue_order_per_host(&open);
}

#[test]
fn excluded_links_go_to_the_records_queue() {
    contract::excluded_links_go_to_the_records_queue(&open);
}

#[test]
fn finish_update_outbox_and_counters_survive_reopen() {
    contract::finish_update_outbox_and_counters_survive_reopen(&open);
}

#[test]
fn embeds_are_queued_on_their_host_and_keep_their_kind() {
    contract::embeds_are_queued_on_their_host_and_keep_their_kind(&open);
}

#[test]
fn an_empty_store_resumes_empty() {
    contract::an_empty_store_resumes_empty(&open);
}

#[test]
fn rescheduled_urls_come_back_when_due_with_their_prior() {
    contract::rescheduled_urls_come_back_when_due_with_their_prior(&open);
}

#[test]
fn a_reschedule_without_its_finish_is_ignored() {
    contract::a_reschedule_without_its_finish_is_ignored(&open);
}

#[test]
fn sitemap_hints_bring_scheduled_urls_forward() {
    contract::sitemap_hints_bring_scheduled_urls_forward(&open);
}

#[test]
fn operator_changes_read_back_and_survive_reopen() {
    contract::operator_changes_read_back_and_survive_reopen(&open);
}

#[test]
fn refetch_queues_done_and_scheduled_urls_again() {
    contract::refetch_queues_done_and_scheduled_urls_again(&open);
}
