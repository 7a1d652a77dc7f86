"""polysql.analysis"""
