"""The bundled demo: a moderator and a viewer account and a cross-examination over public facts."""

from __future__ import annotations

DEMO_TOPIC = "Should a large city centre introduce a congestion charge for private cars?"

DEMO_MATERIAL = """\
Stockholm ran a seven-month congestion-charge trial in 2006 and made the charge permanent in 2007 after a referendum.
During the trial, traffic across the charging cordon fell by about 20 percent compared with the year before.
Public support in Stockholm was below 40 percent before the trial and rose above 50 percent after it.
London introduced its central congestion charge in February 2003 at a daily rate of five pounds.
Transport for London reported that traffic entering the zone fell by about 18 percent in the first year.
Later studies found that congestion in central London drifted back towards pre-charge levels by 2007, partly because road space was reallocated to buses, cyclists and pedestrians.
Singapore has priced road use since 1975 and moved to electronic road pricing in 1998.
Critics argue that a flat charge is regressive, because it takes a larger share of the income of poorer drivers.
Revenue from the London charge is required by law to be spent on transport improvements.
Retail groups in several cities warned of lost trade, but studies of Stockholm found no measurable drop in retail sales inside the cordon.
"""

DEMO_ANALYSTS = [
    {"name": "Ada", "lens": "transport economics: costs, benefits and prices"},
    {"name": "Bo", "lens": "equity and public acceptance"},
    {"name": "Cy", "lens": "evidence quality and durability of effects"},
]

# A comparative debate (seed 003) over the same kind of public, checkable facts.
DEMO_COMPARISON_TOPIC = "Which database should the new order-tracking service be built on?"
DEMO_COMPARISON_MATERIAL = """\
The order-tracking service stores about 40 million orders a year, each with 5 to 30 status events.
Every order has a fixed core (customer, items, totals) and a variable set of carrier-specific fields.
The finance team reconciles orders against invoices every night and needs multi-row transactions.
Four of the six backend engineers have run PostgreSQL in production; one has run MongoDB.
PostgreSQL 18 stores semi-structured data in jsonb columns with GIN indexes.
MongoDB 8 supports multi-document ACID transactions since version 4.0, with a performance cost.
The current platform team operates two PostgreSQL clusters with automated failover and backups.
A managed MongoDB Atlas cluster of the needed size is quoted at about 2,400 dollars a month.
Carrier integrations add a new field set roughly every quarter.
The first release must ship within six months.
"""
DEMO_COMPARISON = {
    "option_a": "MongoDB",
    "option_b": "PostgreSQL",
    "decision_type": "architecture",
    "evidence": [
        {
            "option": "A",
            "source": "Carrier field audit",
            "type": "Doc",
            "summary": "Carrier integrations add a new field set roughly every quarter; documents absorb them "
            "without migrations.",
        },
        {
            "option": "A",
            "source": "Atlas quote",
            "type": "Email",
            "summary": "A managed MongoDB Atlas cluster of the needed size costs about 2,400 dollars a month.",
        },
        {
            "option": "B",
            "source": "Platform runbook",
            "type": "Doc",
            "summary": "The platform team already operates two PostgreSQL clusters with automated failover.",
        },
        {
            "option": "B",
            "source": "Team skills survey",
            "type": "Interview",
            "summary": "Four of six backend engineers have run PostgreSQL in production; one has run MongoDB.",
        },
        {
            "option": "both",
            "source": "Finance reconciliation spec",
            "type": "Doc",
            "summary": "Nightly reconciliation against invoices needs multi-row transactions.",
        },
    ],
    "stakeholders": [
        {"name": "Head of platform", "position": "prefers PostgreSQL", "confidence": "stated", "notes": ""},
        {"name": "Integrations lead", "position": "prefers MongoDB", "confidence": "inferred", "notes": ""},
    ],
    "evidence_gaps": [
        "No load test of jsonb queries at 40 million orders a year.",
        "No quote for a self-hosted MongoDB cluster.",
    ],
}

# An adversarial review: the material is the artifact under review.
DEMO_REVIEW_TOPIC = "Approve RFC 42: move user sessions from PostgreSQL to Redis?"
DEMO_REVIEW_MATERIAL = """\
RFC 42: Move user sessions from PostgreSQL to Redis.
Sessions are read on every request and cost about 30 percent of database load.
We will run a three-node Redis cluster with Sentinel for failover.
Session data will be written to both stores for two weeks before the switch.
Redis persistence will use AOF with fsync every second.
The platform team will own the cluster and its alerts.
Rollback is a configuration flag that points reads back to PostgreSQL.
Expected cost is 400 dollars a month on managed instances.
"""

# A consultation over the order-tracking facts above.
DEMO_CONSULTATION_TOPIC = "How should the order-tracking service store its carrier-specific fields?"

# Debates over the bundled demo KBs (kb.demo): the seed-002 argument graph and the seed-004 market data.
DEMO_KB_DEBATE_TOPIC = "Does urban congestion pricing reduce traffic without unfair harm?"
DEMO_MARKET_TOPIC = "One-month outlook for the S&P 500"
