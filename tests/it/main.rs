//! Black-box tests of the real `mycorrhizal` binary: each test starts it on a free loopback port
//! with a temporary data folder and speaks HTTP to it.

mod accounts;
mod admin;
mod attachments;
mod audit;
mod backup;
mod boot;
mod bundle;
mod calendar;
mod channels;
mod contract;
mod crm;
mod dav;
mod dav_clients;
mod depth;
mod derived;
mod digest;
mod health;
mod helpers;
mod households;
mod import;
mod inventory;
mod isolation;
mod keys;
mod limits;
mod migrations;
mod oidc;
mod photos;
mod reach_out;
pub mod reset;
mod search;
mod sessions;
mod shapes;
mod tokens;
mod twofactor;
mod web;
mod webhooks;
