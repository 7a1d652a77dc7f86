"""polysql.leaderboard"""
